import { createSecureContext, type SecureContext } from 'node:tls';
import type { SecretBox } from '../crypto/secret-box.js';
import type { Db } from '../db/database.js';
import { reportBackgroundFailure, type FailureLogger } from '../observability/background-failures.js';
import type { MaintenanceWindow } from './maintenance-page.js';
import type { CertificateRecord, RouteSnapshot } from './route-snapshot.js';

/** What the edge knows about a verified custom domain. */
export interface DomainRoute {
  /** The platform host name whose instances serve this domain. */
  routeHostname: string;
  httpsRedirect: boolean;
  hsts: boolean;
}

/** Path prefixes the edge answers itself, before routing to an application. */
export const ACME_CHALLENGE_PREFIX = '/.well-known/acme-challenge/';
export const OWNERSHIP_CHALLENGE_PREFIX = '/.well-known/slipway-domain/';

/**
 * The edge's view of custom domains and certificates, read from PostgreSQL so every edge
 * process serves the same names and certificates. Held in memory (a request never waits
 * for the database) and reloaded every `refreshMs` and whenever this process changes one.
 */
interface LoadedCertificate {
  issuedAt: number;
  context: SecureContext;
  pem: { certificate: string; key: string };
  /** The key as the database keeps it (sealed), for the edge's snapshot on disk. */
  privateKeyEnc: string;
}

export class EdgeDirectory {
  private routes = new Map<string, DomainRoute>();
  private contexts = new Map<string, LoadedCertificate>();
  /** Environments in maintenance by id (usually none: the router checks `size` first). */
  private maintenance = new Map<string, MaintenanceWindow>();
  private readonly listeners: Array<() => void> = [];
  /** What the last load found (host names, flags, certificate dates): a change calls the listeners. */
  private signature = '';
  private timer: NodeJS.Timeout | null = null;
  private loading: Promise<void> | null = null;
  private logger: FailureLogger | null = null;

  constructor(
    private readonly db: Db,
    private readonly secrets: SecretBox,
    private readonly refreshMs = 2000,
    /** An edge process starts serving (from its snapshot) even while its database is unreachable. */
    private readonly startWithoutDatabase = false,
  ) {}

  /** Where a failed refresh is reported (the edge driver's logger). */
  useLogger(logger: FailureLogger) {
    this.logger = logger;
  }

  async start(): Promise<void> {
    await this.refresh().catch((err) => {
      if (!this.startWithoutDatabase) throw err;
      reportBackgroundFailure(this.logger, 'edge_directory_refresh', err, { starting: true });
    });
    // A failed refresh keeps the last table serving; the next tick tries again.
    this.timer ??= setInterval(
      () => void this.refresh().catch((err) => reportBackgroundFailure(this.logger, 'edge_directory_refresh', err)),
      this.refreshMs,
    );
    this.timer.unref();
  }

  stop() {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Reloads now (one load at a time; a call during a load waits for a fresh one). */
  async refresh(): Promise<void> {
    while (this.loading) await this.loading;
    this.loading = this.load().finally(() => {
      this.loading = null;
    });
    await this.loading;
  }

  route(host: string): DomainRoute | undefined {
    return this.routes.get(host);
  }

  /** The TLS context of a host name (a custom domain with a certificate), else undefined. */
  secureContext(host: string): SecureContext | undefined {
    return this.contexts.get(host)?.context;
  }

  /** The maintenance window of an environment, if it is in maintenance. */
  maintenanceOf(environmentId: string | undefined): MaintenanceWindow | undefined {
    return environmentId === undefined || this.maintenance.size === 0 ? undefined : this.maintenance.get(environmentId);
  }

  hasCertificate(host: string): boolean {
    return this.contexts.has(host);
  }

  /** Every verified custom domain (an external proxy is configured from them). */
  domains(): Array<DomainRoute & { hostname: string }> {
    return [...this.routes].map(([hostname, route]) => ({ hostname, ...route }));
  }

  /** The certificate chain and private key (PEM) of a host name, for an external proxy. */
  certificatePem(host: string): { certificate: string; key: string } | undefined {
    return this.contexts.get(host)?.pem;
  }

  /** Custom domains and certificates (keys still sealed) for the edge's snapshot on disk. */
  exportForSnapshot(): Pick<RouteSnapshot, 'domains' | 'certificates' | 'maintenance'> {
    return {
      domains: this.domains(),
      maintenance: [...this.maintenance.values()],
      certificates: [...this.contexts].map(([hostname, c]) => ({
        hostname,
        issuedAt: c.issuedAt,
        certificatePem: c.pem.certificate,
        privateKeyEnc: c.privateKeyEnc,
      })),
    };
  }

  /** Serves a snapshot's domains and certificates until the first load from the database replaces them. */
  seed(snapshot: Pick<RouteSnapshot, 'domains' | 'certificates' | 'maintenance'>) {
    this.routes = new Map(snapshot.domains.map(({ hostname, ...route }) => [hostname, route]));
    this.maintenance = new Map(snapshot.maintenance.map((m) => [m.environmentId, m]));
    const contexts = new Map<string, LoadedCertificate>();
    for (const c of snapshot.certificates) {
      try {
        contexts.set(c.hostname, this.loadCertificate(c));
      } catch {
        // A certificate sealed with a key no longer in the keyring (or damaged): that name waits for the database.
      }
    }
    this.contexts = contexts;
  }

  private loadCertificate(c: CertificateRecord): LoadedCertificate {
    const key = this.secrets.open(c.privateKeyEnc);
    const context = createSecureContext({ cert: c.certificatePem, key });
    return { issuedAt: c.issuedAt, context, pem: { certificate: c.certificatePem, key }, privateKeyEnc: c.privateKeyEnc };
  }

  /** Called after a reload that changed a domain or a certificate. */
  onChange(listener: () => void) {
    this.listeners.push(listener);
  }

  /** The key authorization of a pending ACME HTTP-01 challenge. */
  async acmeAnswer(token: string): Promise<string | undefined> {
    const row = await this.db.selectFrom('acme_challenges').select('key_authorization').where('token', '=', token).executeTakeFirst();
    return row?.key_authorization;
  }

  /** The ownership token of a domain not yet verified (served so the platform can check it reaches this edge). */
  async ownershipAnswer(host: string, token: string): Promise<string | undefined> {
    const row = await this.db
      .selectFrom('domains')
      .select('verification_token')
      .where('hostname', '=', host)
      .where('verification_token', '=', token)
      .executeTakeFirst();
    return row?.verification_token;
  }

  private async load(): Promise<void> {
    const rows = await this.db
      .selectFrom('domains')
      .select(['hostname', 'route_hostname', 'https_redirect', 'hsts'])
      .where('verified_at', 'is not', null)
      .execute();
    const routes = new Map<string, DomainRoute>();
    for (const r of rows) routes.set(r.hostname, { routeHostname: r.route_hostname, httpsRedirect: r.https_redirect, hsts: r.hsts });
    this.routes = routes;

    const certs = await this.db.selectFrom('certificates').select(['hostname', 'issued_at']).execute();
    const contexts = new Map<string, LoadedCertificate>();
    const stale: string[] = [];
    for (const c of certs) {
      const known = this.contexts.get(c.hostname);
      if (known && known.issuedAt === c.issued_at.getTime()) contexts.set(c.hostname, known);
      else stale.push(c.hostname);
    }
    if (stale.length) {
      const full = await this.db.selectFrom('certificates').selectAll().where('hostname', 'in', stale).execute();
      for (const c of full)
        contexts.set(
          c.hostname,
          this.loadCertificate({
            hostname: c.hostname,
            issuedAt: c.issued_at.getTime(),
            certificatePem: c.certificate_pem,
            privateKeyEnc: c.private_key_enc,
          }),
        );
    }
    this.contexts = contexts;
    const maintenance = await this.loadMaintenance();
    this.maintenance = maintenance;
    const signature = JSON.stringify([[...routes], [...contexts].map(([h, c]) => [h, c.issuedAt]), [...maintenance]]);
    if (signature !== this.signature) {
      this.signature = signature;
      for (const listener of this.listeners) listener();
    }
  }

  /** Environments in maintenance (not deleted) with the names of their applications. */
  private async loadMaintenance(): Promise<Map<string, MaintenanceWindow>> {
    const rows = await this.db
      .selectFrom('environment_maintenance as m')
      .innerJoin('environments as e', 'e.id', 'm.environment_id')
      .leftJoin('applications as a', 'a.project_id', 'e.project_id')
      .select(['m.environment_id', 'm.message', 'm.retry_after', 'a.id as application_id', 'a.name as application_name'])
      .where('e.deleted_at', 'is', null)
      .orderBy('m.environment_id')
      .orderBy('a.id')
      .execute();
    const windows = new Map<string, MaintenanceWindow>();
    for (const r of rows) {
      let window = windows.get(r.environment_id);
      if (!window) {
        window = { environmentId: r.environment_id, message: r.message, retryAfter: r.retry_after, applications: {} };
        windows.set(r.environment_id, window);
      }
      if (r.application_id && r.application_name) window.applications[r.application_id] = r.application_name;
    }
    return windows;
  }
}
