import { request } from 'undici';
import { caddyAdminEndpoint, checkAdminSocketPrivate, type CaddyAdminEndpoint } from './caddy-admin.js';
import type { EdgeDirectory } from './edge-directory.js';
import { maintenanceHandler } from './maintenance-page.js';
import { logsRequests, type EdgeDriver, type EdgeRequestLogger } from './edge-driver.js';
import { CaddyAccessLog, type AccessLogDropReason, type CaddyAccessEntry } from './caddy-access-log.js';
import type { RequestStats } from './request-stats.js';
import { RouteTable, type Upstream } from './route-table.js';
import { RouterServer } from './router-server.js';
import { UpstreamNameServer, type SrvTarget } from './upstream-name-server.js';

/**
 * How long Caddy keeps a route's instances before asking the name server again; a route switch
 * is live once this has passed (`apply` waits for it).
 */
const UPSTREAMS_REFRESH_MS = 200;

export interface CaddyOptions {
  /**
   * Caddy's admin API (loaded configurations keep it there): a unix socket `unix//path/admin.sock`
   * (the default setup: Caddy's `admin` has `origins localhost`) or `http://127.0.0.1:2019`.
   */
  adminUrl: string;
  /** Where Caddy serves applications (a port Caddy can bind: not 0). */
  host: string;
  port: number;
  httpsPort?: number;
  /**
   * `platform`: certificates the platform issued (PostgreSQL) are loaded into Caddy;
   * `caddy`: Caddy obtains them itself for verified custom domains from `acme`.
   */
  certificates: 'platform' | 'caddy';
  acme?: { directoryUrl: string; email?: string; caFile?: string };
  /** The platform-owned directory of the access log's unix socket (made owner-only). */
  accessLogDirectory: string;
  /** Caddy's group, when Caddy runs as its own user: it may connect to the access log socket too. */
  accessLogGroupId?: number;
}

/** How often dropped access-log lines are reported (one warning per interval, with the counts). */
const DROP_REPORT_MS = 10_000;

type Json = Record<string, unknown>;

/**
 * The edge driver for Caddy 2 (a proxy users already run for this job): the routes' host names,
 * the verified custom domains and their certificates are rendered into one whole Caddy
 * configuration and loaded with `POST /load` of the admin API, which Caddy applies atomically.
 * The instances behind each route are not in that configuration: Caddy reads them from the
 * platform's `UpstreamNameServer` (SRV dynamic upstreams), so a redeploy changes a DNS answer
 * and never reloads Caddy (a load restarts Caddy's servers, which closes clients' idle
 * keep-alive connections: a request racing with that close was lost). Caddy writes its access
 * log to the platform (`CaddyAccessLog`), which feeds the same per-application counters and
 * per-request line as the built-in edge. Draining reads Caddy's
 * own in-flight count per upstream (`GET /reverse_proxy/upstreams`). Ownership tokens and the
 * platform's ACME challenges are answered by a built-in responder on loopback that Caddy
 * forwards `/.well-known/…` to.
 */
export class CaddyDriver implements EdgeDriver {
  readonly name = 'caddy' as const;
  readonly table = new RouteTable();
  private directory: EdgeDirectory | null = null;
  private logger: EdgeRequestLogger | null = null;
  private stats: RequestStats | null = null;
  private readonly accessLog: CaddyAccessLog;
  /** Access-log lines counted for no route since start, by reason (reported as a warning, `accessLogDrops`). */
  private readonly drops: Record<AccessLogDropReason, number> = { malformed: 0, oversized: 0, unknown_host: 0 };
  private dropsReported = 0;
  private dropReport: NodeJS.Timeout | null = null;
  /** Route host name → an instance of its route (whose owner its requests are counted under). */
  private owners = new Map<string, Upstream>();
  private readonly hosts = new Map<string, string>();
  private readonly responder = new RouterServer({ host: '127.0.0.1', port: 0, proxies: false });
  private readonly nameServer = new UpstreamNameServer();
  private applying: Promise<void> = Promise.resolve();
  private loaded: string | null = null;
  private isListening = false;
  /** Caddy's name (its dial address) of every instance the routes send requests to. */
  private dials = new Map<string, string>();
  /** Instances a route switch left, until drained (by Caddy's name, as its in-flight counts list them). */
  private readonly draining = new Map<string, string>();

  private readonly adminEndpoint: CaddyAdminEndpoint;

  constructor(private readonly options: CaddyOptions) {
    this.adminEndpoint = caddyAdminEndpoint(options.adminUrl);
    this.accessLog = new CaddyAccessLog({
      directory: options.accessLogDirectory,
      groupId: options.accessLogGroupId,
      onEntry: (entry) => this.counted(entry),
      onDrop: (reason) => this.dropped(reason),
    });
  }

  /** Access-log lines that counted for no route, by reason, since this driver started. */
  get accessLogDrops(): Readonly<Record<AccessLogDropReason, number>> {
    return { ...this.drops };
  }

  /** The access log's socket (a path in the platform's own directory). */
  get accessLogSocket(): string {
    return this.accessLog.socketPath;
  }

  get listening() {
    return this.isListening;
  }

  get port() {
    return this.options.port;
  }

  get httpsPort() {
    return this.options.httpsPort ?? null;
  }

  useDirectory(directory: EdgeDirectory) {
    this.directory = directory;
    if (this.logger) directory.useLogger(this.logger);
    this.responder.useDirectory(directory);
    directory.onChange(() => void this.apply().catch((err) => this.logger?.warn({ err }, 'loading the Caddy configuration failed')));
  }

  useStats(stats: RequestStats) {
    this.stats = stats;
    if (this.logger) stats.useLogger(this.logger);
  }

  useLogger(logger: EdgeRequestLogger) {
    this.logger = logger;
    this.directory?.useLogger(logger);
    this.stats?.useLogger(logger);
  }

  async listen(): Promise<number> {
    await this.responder.listen();
    await this.nameServer.listen();
    await this.accessLog.listen();
    this.stats?.start();
    // Caddy may still be starting next to the platform: its admin API gets a few seconds.
    for (let attempt = 0; ; attempt++) {
      try {
        await this.admin('GET', '/config/');
        break;
      } catch (err) {
        if (attempt >= 50 || err instanceof AdminError)
          throw new Error(`Caddy's admin API at ${this.options.adminUrl} did not answer: ${(err as Error).message}${hostHint(err)}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    // Issue 27: whoever opens the admin socket owns every route; only Caddy and the platform may.
    if (this.adminEndpoint.socketPath) checkAdminSocketPrivate(this.adminEndpoint.socketPath);
    this.isListening = true;
    await this.apply();
    return this.options.port;
  }

  /**
   * Makes the current state live (one change at a time, the latest state each time): the
   * instances through the name server, then the configuration when something else changed
   * (host names, domains, certificates, a route without any ready instance).
   */
  apply(): Promise<void> {
    const next = this.applying.then(async () => {
      if (!this.isListening) return;
      const routed = this.routedDials();
      // Instances the routes sent requests to and no longer do: draining from now on.
      for (const [id, dial] of this.dials) if (!routed.has(id)) this.draining.set(id, dial);
      for (const id of routed.keys()) this.draining.delete(id);
      this.dials = routed;
      this.owners = new Map(
        this.table
          .snapshot()
          .flatMap(({ host, upstreams }) => upstreams.filter((u) => u.owner).map((u) => [host, u] as const))
          .reverse(), // the first instance of a route wins
      );
      const answersChanged = this.nameServer.set(this.upstreamRecords());
      const config = JSON.stringify(this.render());
      if (config !== this.loaded) {
        await this.admin('POST', '/load', config);
        this.loaded = config;
      }
      // Caddy may hold the previous answer for one refresh interval.
      if (answersChanged) await new Promise((r) => setTimeout(r, UPSTREAMS_REFRESH_MS + 50));
    });
    this.applying = next.catch(() => {}); // the chain only orders loads; `next` itself rejects to the caller
    return next;
  }

  async drain(instanceIds: string[], timeoutMs: number): Promise<void> {
    await this.applying;
    const dials = new Set(instanceIds.map((id) => this.draining.get(id)).filter((d): d is string => d !== undefined));
    const deadline = Date.now() + timeoutMs;
    while (dials.size > 0 && Date.now() < deadline) {
      const upstreams = JSON.parse(await this.admin('GET', '/reverse_proxy/upstreams')) as Array<{ address: string; num_requests: number }>;
      if (!upstreams.some((u) => dials.has(u.address) && u.num_requests > 0)) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    for (const id of instanceIds) this.draining.delete(id);
  }

  async close(): Promise<void> {
    if (this.isListening) {
      this.isListening = false;
      await this.applying;
      // Caddy keeps running for whatever else it serves; the platform's servers go.
      await this.admin('POST', '/load', JSON.stringify({ admin: this.adminSection() })).catch(() => {}); // shutdown
    }
    await this.responder.close();
    await this.nameServer.close();
    await this.accessLog.close();
    if (this.dropReport) clearTimeout(this.dropReport);
    this.reportDrops();
    await this.stats?.stop();
  }

  /** `RouteTable.normalize`, cached: the same few `Host` headers come again and again. */
  private normalizedHost(raw: string): string {
    let host = this.hosts.get(raw);
    if (host === undefined) {
      if (this.hosts.size >= 4096) this.hosts.clear();
      host = RouteTable.normalize(raw);
      this.hosts.set(raw, host);
    }
    return host;
  }

  /** A line counted for no route; reported as one warning per interval, not one per line. */
  private dropped(reason: AccessLogDropReason) {
    this.drops[reason]++;
    this.dropReport ??= setTimeout(() => {
      this.dropReport = null;
      this.reportDrops();
    }, DROP_REPORT_MS).unref();
  }

  private reportDrops() {
    const total = this.drops.malformed + this.drops.oversized + this.drops.unknown_host;
    if (total === this.dropsReported) return;
    this.dropsReported = total;
    this.logger?.warn(
      { dropped: { ...this.drops } },
      'edge access log: lines counted for no route (malformed, oversized or for an unknown host)',
    );
  }

  /**
   * One request Caddy served, from its access log: counted for the route its host name is
   * (the platform's own map of host names and verified domains), and its line at debug. A line
   * for any other host is counted for nobody.
   */
  private counted(entry: CaddyAccessEntry) {
    const request = entry.request;
    // A fully qualified name (`app.example.`) may not be what Caddy routed to the application (its
    // catch-all answers it): counting it for the route would let anyone pad a route's good answers.
    if (/\.(:\d+)?$/.test(request.host.trim())) {
      this.dropped('unknown_host');
      return;
    }
    const requested = this.normalizedHost(request.host);
    const upstream = this.owners.get(this.directory?.route(requested)?.routeHostname ?? requested);
    if (!upstream) {
      this.dropped('unknown_host');
      return;
    }
    // Challenges and ownership tokens are the platform's, not the application's.
    if (/^\/\.well-known\/(acme-challenge|slipway-domain)\//.test(request.uri)) return;
    const status = entry.status;
    const elapsedMs = entry.duration * 1000;
    if (upstream.owner && this.stats) this.stats.record(upstream.statsKey!, upstream.owner, status, elapsedMs);
    if (logsRequests(this.logger))
      this.logger!.debug(
        {
          host: requested,
          method: request.method,
          path: request.uri,
          status,
          ms: Math.round(elapsedMs * 10) / 10,
          application: upstream.owner?.applicationId,
          client: request.remote_ip,
        },
        'edge request',
      );
  }

  /**
   * One admin API call on a fresh connection: Caddy restarts its admin endpoint on every load,
   * closing kept-alive connections. A refused or reset connection is tried again (a load that
   * never arrived is safe to repeat; a repeated load of the same configuration changes nothing).
   */
  private async admin(method: 'GET' | 'POST', path: string, body?: string): Promise<string> {
    for (let attempt = 0; ; attempt++) {
      try {
        const res = await request(new URL(path, this.adminEndpoint.base), {
          method,
          dispatcher: this.adminEndpoint.dispatcher,
          headers: body ? { 'content-type': 'application/json' } : {},
          ...(body ? { body } : {}),
          headersTimeout: 30_000,
          bodyTimeout: 30_000,
        });
        const text = await res.body.text();
        if (res.statusCode >= 300) throw new AdminError(`Caddy admin ${method} ${path}: ${res.statusCode} ${text.slice(0, 500)}`);
        return text;
      } catch (err) {
        if (err instanceof AdminError || attempt >= 5) throw err;
        await new Promise((r) => setTimeout(r, 50 * (attempt + 1)));
      }
    }
  }

  private adminSection() {
    // On a socket the Host is `localhost` (Caddy 2.6 admits no request without a Host, and none but its origins).
    return this.adminEndpoint.socketPath
      ? { listen: this.adminEndpoint.listen, origins: ['localhost'] }
      : { listen: this.adminEndpoint.listen };
  }

  private listenAddress(port: number) {
    return `${this.options.host === '0.0.0.0' || this.options.host === '' ? '' : this.options.host}:${port}`;
  }

  /** Caddy's name of every ready instance: the dial address an SRV answer gives (`<target>.:<port>`). */
  private routedDials(): Map<string, string> {
    const dials = new Map<string, string>();
    for (const { upstreams } of this.table.snapshot())
      for (const u of upstreams) if (u.ready) dials.set(u.instanceId, `${UpstreamNameServer.targetOf(u.host)}.:${u.port}`);
    return dials;
  }

  /** The name server's answers: each route's ready instances. */
  private upstreamRecords(): Map<string, SrvTarget[]> {
    const records = new Map<string, SrvTarget[]>();
    for (const { host, upstreams } of this.table.snapshot())
      records.set(
        UpstreamNameServer.nameOf(host),
        upstreams.filter((u) => u.ready).map((u) => ({ host: u.host, port: u.port })),
      );
    return records;
  }

  /** The whole Caddy configuration for the current routes, domains and certificates. */
  render(): Json {
    const { httpsPort } = this.options;
    const ownCertificates = this.options.certificates === 'platform';
    const domains = this.directory?.domains() ?? [];
    // Names by platform host name: the platform name and its verified custom domains.
    const names = new Map<string, string[]>();
    for (const { host } of this.table.snapshot()) names.set(host, [host]);
    for (const d of domains) names.get(d.routeHostname)?.push(d.hostname);
    const withCertificate = domains.filter((d) => this.directory!.hasCertificate(d.hostname)).map((d) => d.hostname);
    const tlsNames = ownCertificates ? withCertificate : domains.map((d) => d.hostname);

    const routes = (secure: boolean): Json[] => {
      const list: Json[] = [];
      if (!secure)
        list.push({
          match: [{ path: ['/.well-known/acme-challenge/*', '/.well-known/slipway-domain/*'] }],
          handle: [{ handler: 'reverse_proxy', upstreams: [{ dial: `127.0.0.1:${this.responder.port}` }] }],
          terminal: true,
        });
      if (!secure && httpsPort !== undefined) {
        const redirected = domains.filter((d) => d.httpsRedirect && tlsNames.includes(d.hostname)).map((d) => d.hostname);
        if (redirected.length)
          list.push({
            match: [{ host: redirected }],
            handle: [
              {
                handler: 'static_response',
                status_code: 308,
                headers: { Location: [`https://{http.request.host}${httpsPort === 443 ? '' : `:${httpsPort}`}{http.request.uri}`] },
              },
            ],
            terminal: true,
          });
      }
      if (secure) {
        const hsts = domains.filter((d) => d.hsts).map((d) => d.hostname);
        if (hsts.length)
          list.push({
            match: [{ host: hsts }],
            handle: [{ handler: 'headers', response: { set: { 'Strict-Transport-Security': ['max-age=31536000'] } } }],
          });
      }
      for (const { host, upstreams } of this.table.snapshot()) {
        // Only whether a route has a ready instance is in the configuration; which ones is in the name server.
        const resolver = { addresses: [this.nameServer.address] };
        const owner = upstreams[0]?.owner;
        const maintenance = this.directory?.maintenanceOf(owner?.environmentId);
        list.push({
          match: [{ host: names.get(host)! }],
          handle: [
            maintenance
              ? maintenanceHandler(maintenance, owner?.applicationId)
              : upstreams.some((u) => u.ready)
                ? {
                    handler: 'reverse_proxy',
                    dynamic_upstreams: {
                      source: 'srv',
                      name: UpstreamNameServer.nameOf(host),
                      refresh: `${UPSTREAMS_REFRESH_MS}ms`,
                      resolver,
                    },
                    // The SRV targets are names of the name server too.
                    transport: { protocol: 'http', resolver },
                    // A failed connection (an instance that just stopped) is tried again, on a fresh answer.
                    load_balancing: { selection_policy: { policy: 'round_robin' }, try_duration: '5s', try_interval: '50ms' },
                  }
                : jsonResponse(503, 'The application has no healthy instance right now; retry shortly'),
          ],
          terminal: true,
        });
      }
      list.push({ handle: [jsonResponse(404, 'No application is served at this address')] });
      return list;
    };

    const servers: Json = {
      slipway_http: {
        listen: [this.listenAddress(this.options.port)],
        routes: routes(false),
        automatic_https: { disable: true },
        logs: { default_logger_name: ACCESS_LOGGER },
      },
    };
    const apps: Json = { http: { http_port: this.options.port, ...(httpsPort ? { https_port: httpsPort } : {}), servers } };
    if (httpsPort !== undefined && tlsNames.length) {
      servers.slipway_https = {
        listen: [this.listenAddress(httpsPort)],
        routes: routes(true),
        tls_connection_policies: [{ match: { sni: tlsNames } }],
        // Caddy's own ACME manages exactly the custom domains; otherwise it manages nothing.
        automatic_https: ownCertificates ? { disable: true } : { disable_redirects: true },
        logs: { default_logger_name: ACCESS_LOGGER },
      };
      apps.tls = ownCertificates
        ? { certificates: { load_pem: withCertificate.map((h) => ({ ...this.directory!.certificatePem(h)!, tags: [h] })) } }
        : { automation: { policies: [{ subjects: tlsNames, issuers: [this.acmeIssuer()] }] } };
    }
    return {
      admin: this.adminSection(),
      logging: {
        logs: {
          default: { level: 'WARN', exclude: [`http.log.access.${ACCESS_LOGGER}`] },
          // Every request (4xx and 5xx at ERROR, the rest at INFO), as JSON lines to the platform.
          [ACCESS_LOGGER]: {
            writer: { output: 'net', address: this.accessLog.address },
            // Only the fields the platform reads: the headers Caddy logs by default were most of each
            // line, and of the CPU time Caddy and the platform spent on the log (bench/README.md).
            encoder: {
              format: 'filter',
              wrap: { format: 'json' },
              fields: Object.fromEntries(DROPPED_LOG_FIELDS.map((field) => [field, { filter: 'delete' }])),
            },
            level: 'INFO',
            include: [`http.log.access.${ACCESS_LOGGER}`],
          },
        },
      },
      apps,
    };
  }

  private acmeIssuer(): Json {
    const acme = this.options.acme;
    if (!acme) return { module: 'acme' };
    return {
      module: 'acme',
      ca: acme.directoryUrl,
      ...(acme.email ? { email: acme.email } : {}),
      ...(acme.caFile ? { trusted_roots_pem_files: [acme.caFile] } : {}),
      // The HTTP challenge reaches Caddy on the edge's HTTP port (not necessarily 80).
      challenges: { http: { alternate_port: this.options.port }, 'tls-alpn': { disabled: true } },
    };
  }
}

/** The access logger's name in Caddy's configuration. */
const ACCESS_LOGGER = 'slipway_access';

/** Fields of Caddy's access log lines the platform does not read (`CaddyAccessEntry` lists those it does). */
const DROPPED_LOG_FIELDS = [
  'request>headers',
  'request>tls',
  'request>proto',
  'request>remote_port',
  'resp_headers',
  'user_id',
  'common_log',
];

class AdminError extends Error {}

/** Caddy 2.6 on a socket refuses every Host but its `origins`: say what to add. */
function hostHint(err: unknown): string {
  return /host not allowed/.test((err as Error)?.message ?? '') ? " (give Caddy's admin `origins localhost`)" : '';
}

function jsonResponse(status: number, message: string): Json {
  return {
    handler: 'static_response',
    status_code: status,
    headers: { 'Content-Type': ['application/json; charset=utf-8'] },
    body: JSON.stringify({ status, message }),
  };
}
