import { randomBytes, X509Certificate } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { v7 as uuidv7 } from 'uuid';
import { describeAuditedChange } from '../../platform/audit/request-audit.js';
import type { SecretBox } from '../../platform/crypto/secret-box.js';
import type { LogDrainSource } from '../../platform/db/schema.js';
import { invalid, notFound } from '../../platform/errors.js';
import { iso, isoOrNull } from '../../platform/http/schemas.js';
import { isPublicAddress } from '../../platform/net/public-address.js';
import { checkWebhookUrl, RefusedAddress, type RequireOrganizationAdmin } from '../webhooks/index.js';
import type { LogDrainsRepository } from './log-drains.repository.js';
import type { CreateDrainBody, LogDrain } from './log-drains.schemas.js';

type DrainRow = NonNullable<Awaited<ReturnType<LogDrainsRepository['find']>>>;

const ALL_SOURCES: LogDrainSource[] = ['runtime', 'build', 'deploy'];

const view = (row: DrainRow): LogDrain => ({
  id: row.id,
  kind: row.kind,
  name: row.name,
  url: row.url_hint,
  application: row.application,
  sources: row.sources,
  lines_sent: Number(row.lines_sent),
  lines_dropped: Number(row.lines_dropped),
  failed_sends: Number(row.failed_sends),
  last_error: row.last_error,
  last_error_at: isoOrNull(row.last_error_at),
  last_sent_at: isoOrNull(row.last_sent_at),
  created: iso(row.created_at),
});

/** An organization's log drains (its admins manage them); `changed` tells this process's shipper at once. */
export class LogDrainsService {
  constructor(
    private readonly repo: LogDrainsRepository,
    private readonly secrets: SecretBox,
    private readonly requireAdmin: RequireOrganizationAdmin,
    private readonly settings: { allowPrivate: boolean },
    private readonly changed: () => Promise<void>,
  ) {}

  async create(userId: string, orgSlug: string, input: CreateDrainBody) {
    const org = await this.requireAdmin(userId, orgSlug);
    let applicationId: string | null = null;
    if (input.application) {
      const [project, app] = input.application.split('/') as [string, string];
      const found = await this.repo.applicationBySlugs(org.id, project, app);
      if (!found) throw invalid('application', `no application ${input.application} in this organization`);
      applicationId = found.id;
    }
    if (input.ca !== undefined && input.kind !== 'syslog') throw invalid('ca', 'only a syslog+tls drain takes a certificate');
    if (input.token !== undefined && input.kind !== 'otlp') throw invalid('token', 'only an otlp drain takes a token');
    const urlHint = input.kind === 'syslog' ? await this.checkSyslog(input.url, input.ca) : await this.checkHttp(input.url);
    const secret = input.kind === 'https' ? `drain_${randomBytes(24).toString('base64url')}` : (input.token ?? null);
    const id = uuidv7();
    const values = {
      kind: input.kind,
      name: input.name ?? input.kind,
      url_hint: urlHint,
      application_id: applicationId,
      sources: input.sources ?? ALL_SOURCES,
    };
    describeAuditedChange({ organizationId: org.id, resourceType: 'log_drains', resourceId: id, after: values });
    const row = await this.repo.insert({
      id,
      organization_id: org.id,
      url_sealed: this.secrets.seal(input.url),
      secret_sealed: secret ? this.secrets.seal(secret) : null,
      ca_pem: input.ca ?? null,
      created_by: userId,
      ...values,
    });
    await this.changed();
    return { ...view(row), secret: input.kind === 'https' ? secret : null };
  }

  private async checkHttp(text: string): Promise<string> {
    try {
      const url = await checkWebhookUrl(text, this.settings.allowPrivate);
      return `${url.protocol}//${url.host}/…${url.href.slice(-4)}`;
    } catch (err) {
      if (err instanceof RefusedAddress) throw invalid('url', err.message.replace(/^url /, ''));
      throw err;
    }
  }

  /** `syslog+tcp://host:port` or `syslog+tls://host:port`, nothing else in it; the hint is the address itself. */
  private async checkSyslog(text: string, ca: string | undefined): Promise<string> {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      throw invalid('url', 'a syslog drain is syslog+tcp://host:port or syslog+tls://host:port');
    }
    const tls = url.protocol === 'syslog+tls:';
    if (
      !(tls || url.protocol === 'syslog+tcp:') ||
      !url.hostname ||
      !url.port ||
      url.username ||
      url.password ||
      (url.pathname && url.pathname !== '/') ||
      url.search ||
      url.hash
    )
      throw invalid('url', 'a syslog drain is syslog+tcp://host:port or syslog+tls://host:port');
    if (ca !== undefined) {
      if (!tls) throw invalid('ca', 'only a syslog+tls drain takes a certificate');
      try {
        new X509Certificate(ca);
      } catch {
        throw invalid('ca', 'not a PEM certificate');
      }
    }
    if (!this.settings.allowPrivate) {
      const host = url.hostname.replace(/^\[|\]$/g, '');
      const addresses = isIP(host) ? [{ address: host }] : await lookup(host, { all: true, verbatim: true }).catch(() => []);
      if (addresses.length === 0 || !addresses.every((a) => isPublicAddress(a.address)))
        throw invalid('url', 'the syslog server must be a public host (private and loopback ones need WEBHOOK_ALLOW_PRIVATE=true)');
    }
    return `${url.protocol}//${url.host}`;
  }

  async list(userId: string, orgSlug: string): Promise<LogDrain[]> {
    const org = await this.requireAdmin(userId, orgSlug);
    return (await this.repo.list(org.id)).map(view);
  }

  async get(userId: string, orgSlug: string, id: string): Promise<LogDrain> {
    const org = await this.requireAdmin(userId, orgSlug);
    const row = await this.repo.find(org.id, id);
    if (!row) throw notFound('Log drain');
    return view(row);
  }

  async delete(userId: string, orgSlug: string, id: string): Promise<void> {
    const org = await this.requireAdmin(userId, orgSlug);
    const row = await this.repo.find(org.id, id);
    if (!row) throw notFound('Log drain');
    describeAuditedChange({ organizationId: org.id, resourceType: 'log_drains', resourceId: id, before: view(row), after: null });
    if (!(await this.repo.delete(org.id, id))) throw notFound('Log drain');
    await this.changed();
  }
}
