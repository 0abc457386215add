import { Agent, request } from 'undici';
import type { EdgeDirectory } from './edge-directory.js';
import { logsRequests, type EdgeDriver, type EdgeRequestLogger } from './edge-driver.js';
import type { RequestStats } from './request-stats.js';
import { RouteTable } from './route-table.js';
import { RouterServer } from './router-server.js';

export interface CaddyOptions {
  /** Caddy's admin API, e.g. `http://127.0.0.1:2019` (loaded configurations keep it there). */
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
}

type Json = Record<string, unknown>;

/**
 * The edge driver for Caddy 2 (a proxy users already run for this job): the route table,
 * the verified custom domains and their certificates are rendered into one whole Caddy
 * configuration and loaded with `POST /load` of the admin API, which Caddy applies atomically
 * (new requests follow the new routes; requests in flight finish on the old ones), so a route
 * switch drops nothing. Draining reads Caddy's own in-flight count per upstream
 * (`GET /reverse_proxy/upstreams`). Ownership tokens and the platform's ACME challenges are
 * answered by a built-in responder on loopback that Caddy forwards `/.well-known/…` to.
 */
export class CaddyDriver implements EdgeDriver {
  readonly name = 'caddy' as const;
  readonly table = new RouteTable();
  private directory: EdgeDirectory | null = null;
  private logger: EdgeRequestLogger | null = null;
  private readonly responder = new RouterServer({ host: '127.0.0.1', port: 0 });
  private applying: Promise<void> = Promise.resolve();
  private loaded: string | null = null;
  private isListening = false;
  /** Dial address of every instance the loaded configuration routes to. */
  private dials = new Map<string, string>();
  /**
   * Instances a route switch left, until drained: kept in the configuration on a route no
   * request matches, because Caddy forgets an upstream's in-flight count once no loaded
   * configuration names it (and those requests are still running).
   */
  private readonly draining = new Map<string, string>();

  constructor(private readonly options: CaddyOptions) {}

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
    this.responder.useDirectory(directory);
    directory.onChange(() => void this.apply().catch((err) => this.logger?.warn({ err }, 'loading the Caddy configuration failed')));
  }

  /** Counters stay with the built-in edge: Caddy keeps its own metrics. */
  useStats(_stats: RequestStats) {}

  useLogger(logger: EdgeRequestLogger) {
    this.logger = logger;
  }

  async listen(): Promise<number> {
    await this.responder.listen();
    // Caddy may still be starting next to the platform: its admin API gets a few seconds.
    for (let attempt = 0; ; attempt++) {
      try {
        await this.admin('GET', '/config/');
        break;
      } catch (err) {
        if (attempt >= 50) throw new Error(`Caddy's admin API at ${this.options.adminUrl} did not answer: ${(err as Error).message}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    this.isListening = true;
    await this.apply();
    return this.options.port;
  }

  /** Loads the configuration rendered from the current state (one load at a time, the latest state each time). */
  apply(): Promise<void> {
    const next = this.applying.then(async () => {
      if (!this.isListening) return;
      const routed = this.routedDials();
      // Instances the previous configuration routed to and this one does not: draining from now on.
      for (const [id, dial] of this.dials) if (!routed.has(id)) this.draining.set(id, dial);
      for (const id of routed.keys()) this.draining.delete(id);
      this.dials = routed;
      const config = JSON.stringify(this.render());
      if (config === this.loaded) return;
      await this.admin('POST', '/load', config);
      this.loaded = config;
    });
    this.applying = next.catch(() => {});
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
    // Forgotten here, dropped from the configuration at the next load: a reload of its own would
    // close clients' idle keep-alive connections once more (Caddy restarts its servers on every load).
    for (const id of instanceIds) this.draining.delete(id);
  }

  async close(): Promise<void> {
    if (this.isListening) {
      this.isListening = false;
      await this.applying;
      // Caddy keeps running for whatever else it serves; the platform's servers go.
      await this.admin('POST', '/load', JSON.stringify({ admin: this.adminSection() })).catch(() => {});
    }
    await this.responder.close();
  }

  /**
   * One admin API call on a fresh connection: Caddy restarts its admin endpoint on every load,
   * closing kept-alive connections. A refused or reset connection is tried again (a load that
   * never arrived is safe to repeat; a repeated load of the same configuration changes nothing).
   */
  private async admin(method: 'GET' | 'POST', path: string, body?: string): Promise<string> {
    for (let attempt = 0; ; attempt++) {
      try {
        const res = await request(new URL(path, this.options.adminUrl), {
          method,
          dispatcher: adminAgent,
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
    return { listen: new URL(this.options.adminUrl).host };
  }

  private listenAddress(port: number) {
    return `${this.options.host === '0.0.0.0' || this.options.host === '' ? '' : this.options.host}:${port}`;
  }

  private routedDials(): Map<string, string> {
    const dials = new Map<string, string>();
    for (const { upstreams } of this.table.snapshot())
      for (const u of upstreams) if (u.ready) dials.set(u.instanceId, `${u.host}:${u.port}`);
    return dials;
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
        const ready = upstreams.filter((u) => u.ready);
        list.push({
          match: [{ host: names.get(host)! }],
          handle: [
            ready.length
              ? {
                  handler: 'reverse_proxy',
                  upstreams: ready.map((u) => ({ dial: `${u.host}:${u.port}` })),
                  // A failed connection (an instance that just stopped) is tried on the next instance.
                  load_balancing: { selection_policy: { policy: 'round_robin' }, try_duration: '5s', try_interval: '50ms' },
                }
              : jsonResponse(503, 'The application has no healthy instance right now; retry shortly'),
          ],
          terminal: true,
        });
      }
      if (this.draining.size)
        list.push({
          match: [{ host: ['draining.slipway.invalid'] }],
          handle: [{ handler: 'reverse_proxy', upstreams: [...new Set(this.draining.values())].map((dial) => ({ dial })) }],
          terminal: true,
        });
      list.push({ handle: [jsonResponse(404, 'No application is served at this address')] });
      return list;
    };

    const servers: Json = {
      slipway_http: {
        listen: [this.listenAddress(this.options.port)],
        routes: routes(false),
        automatic_https: { disable: true },
        ...(logsRequests(this.logger) ? { logs: {} } : {}),
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
        ...(logsRequests(this.logger) ? { logs: {} } : {}),
      };
      apps.tls = ownCertificates
        ? { certificates: { load_pem: withCertificate.map((h) => ({ ...this.directory!.certificatePem(h)!, tags: [h] })) } }
        : { automation: { policies: [{ subjects: tlsNames, issuers: [this.acmeIssuer()] }] } };
    }
    return {
      admin: this.adminSection(),
      logging: { logs: { default: { level: logsRequests(this.logger) ? 'DEBUG' : 'WARN' } } },
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

/** No keep-alive to the admin API (see `admin`). */
const adminAgent = new Agent({ pipelining: 0 });

class AdminError extends Error {}

function jsonResponse(status: number, message: string): Json {
  return {
    handler: 'static_response',
    status_code: status,
    headers: { 'Content-Type': ['application/json; charset=utf-8'] },
    body: JSON.stringify({ status, message }),
  };
}
