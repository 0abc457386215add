import { randomBytes } from 'node:crypto';
import type { Static } from 'typebox';
import { v7 as uuidv7 } from 'uuid';
import type { SecretBox } from '../../platform/crypto/secret-box.js';
import type { Db } from '../../platform/db/database.js';
import { AppError, conflict, invalid, isUniqueViolation, notFound } from '../../platform/errors.js';
import type { ApplicationsService } from '../applications/index.js';
import type { DeploymentsService } from '../../pipeline/index.js';
import { routeHostname } from '../../platform/edge/route-hostname.js';
import { findProductionEnvironmentId } from '../../platform/environments/index.js';
import type { AcmeIssuer } from './acme-issuer.js';
import { DomainsRepository, type DomainRow } from './domains.repository.js';
import { AddDomainBody, HOSTNAME_PATTERN, type Domain } from './domains.schemas.js';
import { challengeRecordName, checkOwnership, type OwnershipCheckSettings } from './ownership-check.js';

export interface DomainsSettings {
  /** ROUTER_DOMAIN: its subdomains are the platform's own names, routed without a domain. */
  routerDomain: string;
  ownership: OwnershipCheckSettings;
  renewDays: number;
}

export interface DomainsLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

const HOSTNAME = new RegExp(HOSTNAME_PATTERN);

/**
 * Custom domains of application environments: any application may claim a name, the first
 * to prove it by DNS (a TXT record with its claim's token) owns it across the platform; it is
 * live on the edge only then, then given a certificate from the ACME directory (when one is
 * configured) and renewed before it expires.
 */
export class DomainsService {
  private readonly repo: DomainsRepository;
  constructor(
    private readonly db: Db,
    repo: DomainsRepository,
    private readonly secrets: SecretBox,
    private readonly apps: ApplicationsService,
    /** Where an application environment deploys (the deployments module's answer). */
    private readonly targets: Pick<DeploymentsService, 'target'>,
    private readonly settings: DomainsSettings,
    private readonly issuer: AcmeIssuer | null,
    /**
     * Served names changed: this process's edge reloads now, and for an application's names
     * (null: only a certificate) a cluster's Ingress is reconciled.
     */
    private readonly changed: (applicationId: string | null) => Promise<void>,
    private readonly log: DomainsLogger,
  ) {
    this.repo = repo;
  }

  async list(userId: string, applicationId: string): Promise<Static<typeof Domain>[]> {
    await this.apps.authorize(userId, applicationId);
    return (await this.repo.list(applicationId)).map((d) => this.view(d));
  }

  async get(userId: string, applicationId: string, domainId: string): Promise<Static<typeof Domain>> {
    await this.apps.authorize(userId, applicationId);
    return this.view(await this.find(applicationId, domainId));
  }

  async add(userId: string, applicationId: string, input: Static<typeof AddDomainBody>): Promise<Static<typeof Domain>> {
    const app = await this.apps.authorize(userId, applicationId);
    const hostname = input.hostname.trim().toLowerCase().replace(/\.$/, '');
    if (!HOSTNAME.test(hostname))
      throw invalid('hostname', `'${input.hostname}' is not a host name (letters, digits, hyphens; at least two labels)`);
    const platformDomain = this.settings.routerDomain.toLowerCase();
    if (hostname === platformDomain || hostname.endsWith(`.${platformDomain}`)) {
      throw invalid('hostname', `Names under ${platformDomain} are the platform's own: every application environment has one already`);
    }
    const environmentId = await this.environmentId(app.project_id, applicationId, input.environment);
    await this.requireSettingsAccess(userId, environmentId);
    const target = await this.targets.target(applicationId, environmentId);
    if (!target) throw notFound('Environment');
    // A claim reserves nothing: whoever proves the name first owns it, and a proven name is not claimable.
    if (await this.repo.verifiedOwner(hostname)) throw conflict(`${hostname} is already claimed and proven by an application`);
    const id = uuidv7();
    try {
      await this.repo.insert({
        id,
        application_id: applicationId,
        environment_id: environmentId,
        hostname,
        route_hostname: routeHostname(target, this.settings.routerDomain),
        verification_token: randomBytes(24).toString('base64url'),
        https_redirect: input.https_redirect ?? true,
        hsts: input.hsts ?? false,
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict(`${hostname} is already claimed by this application`);
      throw err;
    }
    return this.view(await this.find(applicationId, id));
  }

  /**
   * Checks ownership; a verified domain goes live and, with ACME configured, gets its
   * certificate (again: renewed now when inside the renewal window or after a failure).
   */
  async verify(userId: string, applicationId: string, domainId: string): Promise<Static<typeof Domain>> {
    await this.apps.authorize(userId, applicationId);
    const domain = await this.find(applicationId, domainId);
    await this.requireSettingsAccess(userId, domain.environment_id);
    if (!domain.verified_at) {
      const taken = conflict(`${domain.hostname} was proven first by another application: this claim cannot take it over`);
      if (await this.repo.verifiedOwner(domain.hostname)) throw taken;
      const failure = await checkOwnership(domain.hostname, domain.verification_token, this.settings.ownership);
      if (failure) throw new AppError('VALIDATION', `Ownership of ${domain.hostname} not proven: ${failure}`);
      try {
        await this.repo.markVerified(domain.id);
      } catch (err) {
        // Two claims proven at once: the unique index on proven names keeps the first.
        if (isUniqueViolation(err, 'domains_verified_hostname_key')) throw taken;
        throw err;
      }
      await this.changed(applicationId);
    }
    if (this.issuer && this.certificateDue(domain) && (await this.repo.claimIssuance(domain.id))) {
      // Issuance takes seconds to minutes: the caller follows `certificate.status`.
      void this.issue(domain.id, domain.hostname);
    }
    return this.view(await this.find(applicationId, domainId));
  }

  async remove(userId: string, applicationId: string, domainId: string): Promise<void> {
    await this.apps.authorize(userId, applicationId);
    const domain = await this.find(applicationId, domainId);
    await this.requireSettingsAccess(userId, domain.environment_id);
    await this.repo.remove(domain.id, domain.hostname, domain.verified_at !== null);
    await this.changed(applicationId);
  }

  /** Issues missing certificates and renews those expiring within ACME_RENEW_DAYS (a periodic sweep). */
  async renewDue(): Promise<void> {
    if (!this.issuer) return;
    const due = await this.repo.dueForCertificate(new Date(Date.now() + this.settings.renewDays * 86_400_000));
    for (const d of due) {
      if (await this.repo.claimIssuance(d.id)) await this.issue(d.id, d.hostname);
    }
  }

  /** No certificate yet, a failed attempt, or one inside the renewal window. */
  private certificateDue(d: DomainRow): boolean {
    if (d.certificate_status !== 'issued' || !d.not_after) return true;
    return d.not_after.getTime() < Date.now() + this.settings.renewDays * 86_400_000;
  }

  private async issue(domainId: string, hostname: string): Promise<void> {
    try {
      const cert = await this.issuer!.issue(hostname);
      await this.repo.saveCertificate(domainId, hostname, cert.certificatePem, this.secrets.seal(cert.privateKeyPem), cert.notAfter);
      this.log.info({ hostname, notAfter: cert.notAfter }, 'certificate issued');
      await this.changed(null);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.log.warn({ hostname, err: message }, 'certificate issuance failed');
      await this.repo
        .markFailed(domainId, message)
        .catch((err) => this.log.warn({ hostname, err }, 'recording the failed issuance failed'));
    }
  }

  private async find(applicationId: string, domainId: string): Promise<DomainRow> {
    const domain = await this.repo.find(applicationId, domainId);
    if (!domain) throw notFound('Domain');
    return domain;
  }

  private async environmentId(projectId: string, applicationId: string, slug: string | undefined): Promise<string> {
    if (slug === undefined) {
      const id = await findProductionEnvironmentId(this.db, applicationId);
      if (!id) throw notFound('Production environment of the application');
      return id;
    }
    const env = await this.db
      .selectFrom('environments')
      .select('id')
      .where('project_id', '=', projectId)
      .where('slug', '=', slug)
      .executeTakeFirst();
    if (!env) throw notFound(`Environment '${slug}'`);
    return env.id;
  }

  /** As application settings: any member, but a protected environment's names are the workspace admins' to change. */
  private async requireSettingsAccess(userId: string, environmentId: string): Promise<void> {
    const row = await this.db
      .selectFrom('environments as e')
      .innerJoin('projects as p', 'p.id', 'e.project_id')
      .leftJoin('memberships as m', (j) => j.onRef('m.organization_id', '=', 'p.organization_id').on('m.user_id', '=', userId))
      .select(['e.slug', 'e.protected', 'm.admin'])
      .where('e.id', '=', environmentId)
      .executeTakeFirst();
    if (row?.protected && !row.admin)
      throw new AppError('FORBIDDEN', `Environment '${row.slug}' is protected: only workspace admins change its domains`);
  }

  private view(d: DomainRow): Static<typeof Domain> {
    return {
      id: d.id,
      hostname: d.hostname,
      application_id: d.application_id,
      environment: d.environment_slug,
      verified: d.verified_at !== null,
      verified_at: d.verified_at?.toISOString() ?? null,
      verification: { method: 'dns', record_type: 'TXT', record_name: challengeRecordName(d.hostname), token: d.verification_token },
      https_redirect: d.https_redirect,
      hsts: d.hsts,
      certificate: { status: d.certificate_status, error: d.certificate_error, not_after: d.not_after?.toISOString() ?? null },
      created: d.created_at.toISOString(),
    };
  }
}
