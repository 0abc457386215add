import { createHash } from 'node:crypto';
import { chmodSync, lstatSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AccessLogDropReason } from './caddy-access-log.js';
import type { EdgeDirectory } from './edge-directory.js';
import { logsRequests, type EdgeDriver, type EdgeRequestLogger } from './edge-driver.js';
import { NginxAccessLog, type NginxAccessEntry } from './nginx-access-log.js';
import { isSafeHostname, renderNginxConfig, upstreamAddress, type NginxRoute, type NginxTlsName } from './nginx-config.js';
import { NginxProcess } from './nginx-process.js';
import { runningConfigListensOn } from './proxy-directory.js';
import type { RequestStats } from './request-stats.js';
import { RouteTable, type Upstream } from './route-table.js';
import { RouterServer } from './router-server.js';

export interface NginxOptions {
  binary: string;
  /** The platform-owned directory of nginx's configuration, certificates, pid and logs (made owner-only). */
  directory: string;
  /** Where nginx serves applications (fixed ports: nginx cannot say which port 0 chose). */
  host: string;
  port: number;
  httpsPort?: number;
  /** The unprivileged user nginx's workers run as when the platform (and so nginx's master) is root. */
  workerUser?: string;
}

const CHALLENGE_PATH = /^\/\.well-known\/(acme-challenge|slipway-domain)\//;

/** How often lines counted for no route are reported (one warning per interval, with the counts). */
const DROP_REPORT_MS = 10_000;

/**
 * The edge driver for nginx (Debian's `nginx`): the routes, verified custom domains,
 * maintenance pages and certificates are rendered into one nginx.conf (one `server` per route,
 * one `upstream … keepalive` of its ready instances) in the platform's own directory, checked
 * with `nginx -t` and applied with SIGHUP, which starts workers on the new configuration and
 * lets the old ones finish their requests. nginx runs as a daemon of its own: it outlives the
 * edge process, and the next edge process adopts it (its pid file and title name this
 * configuration). Its access log (the route each request was served under) feeds the same
 * per-application counters as the built-in edge. ACME challenges and ownership tokens go to a
 * built-in responder on loopback.
 */
export class NginxDriver implements EdgeDriver {
  readonly name = 'nginx' as const;
  readonly table = new RouteTable();
  private directory: EdgeDirectory | null = null;
  private logger: EdgeRequestLogger | null = null;
  private stats: RequestStats | null = null;
  private readonly nginx: NginxProcess;
  private readonly accessLog: NginxAccessLog;
  private readonly responder = new RouterServer({ host: '127.0.0.1', port: 0, proxies: false });
  private readonly drops: Record<AccessLogDropReason, number> = { malformed: 0, oversized: 0, unknown_host: 0 };
  private dropsReported = 0;
  private dropReport: NodeJS.Timeout | null = null;
  /** Route host name → an instance of its route (whose owner its requests are counted under). */
  private owners = new Map<string, Upstream>();
  private applying: Promise<void> = Promise.resolve();
  private loaded: string | null = null;
  private isListening = false;
  private keepServingOnClose = false;
  /** The master's pid, and whether this driver found it running (adopted) rather than started it. */
  private master: { pid: number; adopted: boolean } | null = null;

  constructor(private readonly options: NginxOptions) {
    this.nginx = new NginxProcess(options.binary, options.directory);
    this.accessLog = new NginxAccessLog({
      path: join(options.directory, 'access.log'),
      onEntry: (entry) => this.counted(entry),
      onDrop: (reason) => this.dropped(reason),
    });
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

  /** nginx's master process, and whether it was adopted (found running) rather than started. */
  get masterProcess(): { pid: number; adopted: boolean } | null {
    return this.master;
  }

  /** Access-log lines that counted for no route, by reason, since this driver started. */
  get accessLogDrops(): Readonly<Record<AccessLogDropReason, number>> {
    return { ...this.drops };
  }

  useDirectory(directory: EdgeDirectory) {
    this.directory = directory;
    if (this.logger) directory.useLogger(this.logger);
    this.responder.useDirectory(directory);
    directory.onChange(() => void this.apply().catch((err) => this.logger?.warn({ err }, 'applying the nginx configuration failed')));
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
    this.prepareDirectory();
    await this.responder.listen();
    this.stats?.start();
    const config = this.render();
    const { adopted, pid } = await this.nginx.start(config);
    const moved = adopted && !runningConfigListensOn(this.nginx.confPath, this.options.port);
    this.master = { pid, adopted };
    this.logger?.warn({ pid, configuration: this.nginx.confPath }, adopted ? 'adopted the running nginx' : 'started nginx');
    // An adopted nginx serves its routes until the first apply() (the table is empty until the runtime fills it).
    this.loaded = adopted ? null : config;
    this.accessLog.start();
    this.isListening = true;
    if (moved) await this.apply();
    return this.options.port;
  }

  /** Makes the table's current content live (one change at a time, the latest state each time). */
  apply(): Promise<void> {
    const next = this.applying.then(async () => {
      if (!this.isListening) return;
      // Lines of the previous configuration are counted under its owners before they change.
      this.accessLog.read();
      const config = this.render();
      if (config !== this.loaded) {
        await this.nginx.reload(config);
        this.loaded = config;
      }
    });
    this.applying = next.catch(() => {}); // the chain only orders reloads; `next` itself rejects to the caller
    return next;
  }

  /** Requests to retired instances run on the workers of earlier configurations: done when those have exited. */
  async drain(_instanceIds: string[], timeoutMs: number): Promise<void> {
    await this.applying;
    await this.nginx.drained(timeoutMs);
  }

  /** A later `close()` leaves nginx serving (the next edge process adopts it). */
  keepServing() {
    this.keepServingOnClose = true;
  }

  async close(): Promise<void> {
    if (this.isListening) {
      this.isListening = false;
      await this.applying;
      this.accessLog.close();
      if (!this.keepServingOnClose) await this.nginx.stop();
    }
    await this.responder.close();
    if (this.dropReport) clearTimeout(this.dropReport);
    this.reportDrops();
    await this.stats?.stop();
  }

  /** The directory and its certificate folder: the platform's, never a symlink, owner-only. */
  private prepareDirectory() {
    for (const dir of [this.options.directory, join(this.options.directory, 'certs'), join(this.options.directory, 'tmp')]) {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      const stat = lstatSync(dir);
      if (!stat.isDirectory() || stat.uid !== process.getuid!())
        throw new Error(`${dir} must be a directory owned by the platform's user (nginx's configuration and certificates live there)`);
      chmodSync(dir, 0o700);
    }
  }

  /** The current routes as nginx.conf; certificate files are written (0600) for the names that have one. */
  private render(): string {
    const directory = this.directory;
    const domains = directory?.domains() ?? [];
    const httpsPort = this.options.httpsPort ?? null;
    const routes: NginxRoute[] = [];
    const known = new Set<string>();
    const owners = new Map<string, Upstream>();
    for (const { host, upstreams } of this.table.snapshot()) {
      if (!isSafeHostname(host)) {
        this.logger?.warn({ host }, 'nginx edge: a route host name that is not a plain DNS name was left out');
        continue;
      }
      known.add(host);
      const owner = upstreams.find((u) => u.owner);
      if (owner) owners.set(host, owner);
      const maintenance = directory?.maintenanceOf(owner?.owner?.environmentId);
      routes.push({
        host,
        names: [host],
        upstreams: upstreams
          .filter((u) => u.ready && upstreamAddress(u.host, u.port) !== null)
          .map((u) => ({ host: u.host, port: u.port })),
        ...(maintenance ? { maintenance: { window: maintenance, applicationId: owner?.owner?.applicationId } } : {}),
      });
    }
    this.owners = owners;
    const byHost = new Map(routes.map((r) => [r.host, r]));
    const tls: NginxTlsName[] = [];
    const redirects: Array<{ hostname: string; routeHost: string }> = [];
    const pemFiles = new Set<string>();
    for (const d of domains) {
      const route = byHost.get(d.routeHostname);
      if (!route || !isSafeHostname(d.hostname) || known.has(d.hostname)) continue;
      const pem = httpsPort !== null ? directory!.certificatePem(d.hostname) : undefined;
      if (pem) {
        const file = this.writeCertificate(d.hostname, `${pem.certificate.trim()}\n${pem.key.trim()}\n`);
        pemFiles.add(file);
        tls.push({ hostname: d.hostname, routeHost: route.host, pemFile: file, hsts: d.hsts });
      }
      if (pem && d.httpsRedirect) redirects.push({ hostname: d.hostname, routeHost: route.host });
      else route.names.push(d.hostname);
    }
    this.removeCertificatesBut(pemFiles);
    return renderNginxConfig({
      dir: this.options.directory,
      workerUser: process.getuid!() === 0 ? (this.options.workerUser ?? 'www-data') : null,
      listenHost: this.options.host,
      port: this.options.port,
      httpsPort,
      responderPort: this.responder.port,
      routes,
      redirects,
      tls,
      logRequests: logsRequests(this.logger),
    });
  }

  /** One PEM file per name, named by its content's hash (a renewal is a new file; nginx reads it at the reload). */
  private writeCertificate(hostname: string, pem: string): string {
    const digest = createHash('sha256').update(hostname).update('\0').update(pem).digest('hex').slice(0, 32);
    const file = join(this.options.directory, 'certs', `${digest}.pem`);
    try {
      lstatSync(file);
      return file; // the same name and certificate: already written
    } catch {
      const partial = `${file}.partial`;
      rmSync(partial, { force: true });
      writeFileSync(partial, pem, { mode: 0o600, flag: 'wx' });
      renameSync(partial, file);
      return file;
    }
  }

  private removeCertificatesBut(keep: Set<string>) {
    const dir = join(this.options.directory, 'certs');
    for (const name of readdirSync(dir)) if (!keep.has(join(dir, name))) rmSync(join(dir, name), { force: true });
  }

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
      'edge access log: lines counted for no route (malformed, oversized or for an unknown route)',
    );
  }

  /**
   * One request nginx served: counted for the route its server block is (set in the
   * configuration, never taken from the request), and its line at debug. The default
   * server's requests (unknown names) count for nobody, and are not drops.
   */
  private counted(entry: NginxAccessEntry) {
    if (entry.route === '') return;
    const upstream = this.owners.get(entry.route);
    if (!upstream) {
      this.dropped('unknown_host');
      return;
    }
    // Challenges and ownership tokens are the platform's, not the application's: nginx does not log them
    // (nginx-config.ts), but an adopted nginx of an earlier version did until its first reload.
    if (entry.uri !== '' && CHALLENGE_PATH.test(entry.uri)) return;
    const elapsedMs = entry.duration * 1000;
    if (upstream.owner && this.stats) this.stats.record(upstream.statsKey!, upstream.owner, entry.status, elapsedMs);
    if (logsRequests(this.logger))
      this.logger!.debug(
        {
          host: entry.route,
          method: entry.method,
          path: entry.uri,
          status: entry.status,
          ms: Math.round(elapsedMs * 10) / 10,
          application: upstream.owner?.applicationId,
          client: entry.remoteIp,
        },
        'edge request',
      );
  }
}
