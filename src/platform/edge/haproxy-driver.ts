import { createHash } from 'node:crypto';
import { chmodSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EdgeDirectory } from './edge-directory.js';
import type { EdgeDriver, EdgeRequestLogger } from './edge-driver.js';
import { parseStatCsv, parseTableCounters } from './haproxy-cli.js';
import {
  backendName,
  isPlainPath,
  LATENCY_TABLE,
  renderHaproxyConfig,
  splitAddress,
  type HaproxyFiles,
  type HaproxyRoute,
  type HaproxySlot,
  type HaproxyTlsName,
} from './haproxy-config.js';
import { HaproxyProcess } from './haproxy-process.js';
import { runningConfigListensOn } from './proxy-directory.js';
import { isSafeHostname, upstreamAddress } from './nginx-config.js';
import { LATENCY_BOUNDS_MS, type RequestStats } from './request-stats.js';
import { RouteTable, type Upstream } from './route-table.js';
import { RouterServer } from './router-server.js';

export interface HaproxyOptions {
  binary: string;
  /** The platform-owned directory of HAProxy's configuration, certificates, pid and master socket (made owner-only). */
  directory: string;
  /** Where HAProxy serves applications (fixed ports). */
  host: string;
  port: number;
  httpsPort?: number;
  /** The unprivileged user HAProxy's workers run as when the platform (and so HAProxy's master) is root. */
  workerUser?: string;
}

/** Server slots a route's backend starts with (more on the reload that the next instance past them needs). */
const MIN_SLOTS = 4;
/** What one worker had counted for a route's backend: answers by status class (`show stat`), by latency bucket (its table). */
interface BackendCounts {
  classes: number[];
  buckets: number[];
}

const STATUS_CLASSES = ['hrsp_1xx', 'hrsp_2xx', 'hrsp_3xx', 'hrsp_4xx', 'hrsp_5xx'];
const BUCKETS = LATENCY_BOUNDS_MS.length + 1;

/** How often the per-route counters are read from HAProxy (and its master checked). */
const STATS_POLL_MS = 1000;
// Runtime commands sent per CLI connection (each ~60 bytes; HAProxy reads one request of at most its 16 kB buffer).
const RUNTIME_BATCH = 64;

/**
 * The edge driver for HAProxy (Debian's `haproxy`, 2.6+). Routes, verified custom domains,
 * maintenance pages and certificates make one configuration (Host → backend through a map
 * file, one backend per route with a fixed number of server slots). A deployment switch needs
 * no reload: the new instances' slots get their address and `state ready`, the old ones
 * `state drain` and then, once their requests are done, `state maint` (the slot is free again),
 * all through the master CLI. A route, domain, certificate or maintenance page that comes or
 * goes reloads HAProxy: the listening sockets pass to the new worker, and the old one answers
 * the next request on each idle connection with `Connection: close` (`option
 * idle-close-on-response`) instead of cutting it. HAProxy runs as a daemon of its own: the next
 * edge process adopts it, and this one starts it again when its master is gone. Requests are
 * counted per route by status class (`show stat`) and latency bucket (HAProxy's `latency` table).
 */
export class HaproxyDriver implements EdgeDriver {
  readonly name = 'haproxy' as const;
  readonly table = new RouteTable();
  private directory: EdgeDirectory | null = null;
  private logger: EdgeRequestLogger | null = null;
  private stats: RequestStats | null = null;
  private readonly haproxy: HaproxyProcess;
  private readonly responder = new RouterServer({ host: '127.0.0.1', port: 0, proxies: false });
  private applying: Promise<void> = Promise.resolve();
  /** What the running worker loaded, slot contents aside (null: unknown, the next apply reloads). */
  private loadedShape: string | null = null;
  /** Route host → its backend's slots as the running worker has them. */
  private slots = new Map<string, HaproxySlot[]>();
  /** Backend → the owner its requests are counted under, and the counters already counted. */
  private owners = new Map<string, Upstream>();
  /** Worker pid → backend → what was already counted. */
  private counted = new Map<number, Map<string, BackendCounts>>();
  private poll: NodeJS.Timeout | null = null;
  private reading: Promise<void> | null = null;
  private isListening = false;
  private keepServingOnClose = false;
  private master: { pid: number; adopted: boolean } | null = null;
  /** A start of HAProxy after its master was found gone, while it runs (one at a time). */
  private restarting: Promise<void> | null = null;

  constructor(private readonly options: HaproxyOptions) {
    this.haproxy = new HaproxyProcess(options.binary, options.directory);
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

  /** HAProxy's master process, and whether it was adopted (found running) rather than started. */
  get masterProcess(): { pid: number; adopted: boolean } | null {
    return this.master;
  }

  useDirectory(directory: EdgeDirectory) {
    this.directory = directory;
    if (this.logger) directory.useLogger(this.logger);
    this.responder.useDirectory(directory);
    directory.onChange(() => void this.apply().catch((err) => this.logger?.warn({ err }, 'applying the HAProxy configuration failed')));
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
    if (!isPlainPath(this.options.directory))
      throw new Error(`${this.options.directory}: HAProxy's directory may hold only letters, digits and . _ / -`);
    this.prepareDirectory();
    await this.responder.listen();
    this.stats?.start();
    const { files, shape } = this.render(true);
    this.writeFiles(files);
    const { adopted, pid } = await this.haproxy.start(files.config);
    const moved = adopted && !runningConfigListensOn(this.haproxy.confPath, this.options.port);
    this.master = { pid, adopted };
    this.logger?.warn({ pid, configuration: this.haproxy.confPath }, adopted ? 'adopted the running HAProxy' : 'started HAProxy');
    // An adopted HAProxy serves its routes until the first apply() (the table is empty until the runtime fills it),
    // and what it counted before was counted by the previous edge process.
    this.loadedShape = adopted ? null : shape;
    await this.readCounters(false);
    this.isListening = true;
    this.poll = setInterval(() => {
      if (this.haproxy.masterPid() === null)
        return void this.superviseMaster().catch((err) => this.logger?.warn({ err }, 'starting HAProxy again failed'));
      if (this.reading) return;
      this.reading = this.readCounters(true)
        .catch((err) => this.logger?.warn({ err }, 'reading HAProxy counters failed'))
        .finally(() => (this.reading = null));
    }, STATS_POLL_MS).unref();
    if (moved) await this.apply();
    return this.options.port;
  }

  /** Makes the table's current content live (one change at a time, the latest state each time). */
  apply(): Promise<void> {
    const next = this.applying.then(async () => {
      if (!this.isListening) return;
      const previous = this.slots;
      const { files, shape, commands } = this.render(false);
      if (shape === this.loadedShape && commands !== null) {
        if (commands.length === 0) return;
        try {
          await this.runtime(commands);
          return;
        } catch (err) {
          // The slots already say the new state: a reload of the whole configuration makes it live now,
          // rather than leaving the route on its old (or drained) servers until some later change.
          this.logger?.warn({ err }, 'HAProxy refused a runtime change: reloading the whole configuration instead');
        }
      }
      this.writeFiles(files);
      try {
        // What the current worker answered is read just before it stops taking requests: its answers after this
        // read (the master's re-execution, the last ones on connections it then closes) go uncounted.
        await this.haproxy.reload(files.config, async () => {
          await this.reading;
          // Holding the poll's place: two reads at once would both add what came since the same last read.
          this.reading = this.readCounters(true).catch(() => {});
          await this.reading;
          this.reading = null;
        });
      } catch (err) {
        this.slots = previous;
        throw err;
      }
      this.loadedShape = shape;
    });
    this.applying = next.catch(() => {}); // the chain only orders changes; `next` itself rejects to the caller
    return next;
  }

  /** Requests to retired instances: their slots drain in the current worker, and workers of earlier configurations end. */
  async drain(_instanceIds: string[], timeoutMs: number): Promise<void> {
    await this.applying;
    const deadline = Date.now() + timeoutMs;
    const draining = () =>
      [...this.slots].flatMap(([host, slots]) =>
        slots.flatMap((s, slot) => (s.state === 'drain' ? [{ host, slot, address: s.address }] : [])),
      );
    while (Date.now() < deadline && draining().length > 0) {
      const busy = new Set<string>();
      const rows = parseStatCsv(await this.haproxy.command('@1 show stat -1 4 -1'));
      for (const r of rows) if (Number(r.scur) > 0 || Number(r.qcur) > 0) busy.add(`${r.pxname}/${r.svname}`);
      await this.freeSlots(draining().filter((d) => !busy.has(`${backendName(d.host)}/s${d.slot}`)));
      if (draining().length > 0) await new Promise((r) => setTimeout(r, 50));
    }
    await this.freeSlots(draining());
    await this.haproxy.drained(Math.max(0, deadline - Date.now()));
  }

  /** A later `close()` leaves HAProxy serving (the next edge process adopts it). */
  keepServing() {
    this.keepServingOnClose = true;
  }

  async close(): Promise<void> {
    if (this.poll) clearInterval(this.poll);
    this.poll = null;
    if (this.isListening) {
      this.isListening = false;
      await this.applying;
      await this.reading;
      await this.readCounters(true).catch(() => {});
      if (!this.keepServingOnClose) await this.haproxy.stop();
    }
    await this.responder.close();
    await this.stats?.stop();
  }

  /**
   * Slots whose instance finished its requests: out of rotation for good (`maint`), free for the next
   * instance. In the chain of changes, and only those still draining the same address (an apply in
   * between may have given the address back to a new instance).
   */
  private freeSlots(done: Array<{ host: string; slot: number; address: string | null }>): Promise<void> {
    const next = this.applying.then(async () => {
      const still = done.filter((d) => {
        const slot = this.slots.get(d.host)?.[d.slot];
        return slot?.state === 'drain' && slot.address === d.address;
      });
      if (still.length === 0) return;
      await this.runtime(still.map((d) => `set server ${backendName(d.host)}/s${d.slot} state maint`));
      for (const d of still) Object.assign(this.slots.get(d.host)![d.slot]!, { state: 'free', address: null });
    });
    this.applying = next.catch(() => {});
    return next;
  }

  /** Commands for the current worker, in one connection; an answer naming an error fails the change (the next apply reloads). */
  private async runtime(commands: string[]) {
    // In batches: one line per connection, kept well inside the CLI's request buffer however many routes change.
    for (let i = 0; i < commands.length; i += RUNTIME_BATCH) {
      const answer = await this.haproxy.command(
        commands
          .slice(i, i + RUNTIME_BATCH)
          .map((c) => `@1 ${c}`)
          .join('; '),
      );
      if (/No such|Unknown|Require|Invalid|not found|failed|error/i.test(answer)) {
        this.loadedShape = null;
        throw new Error(`HAProxy refused a server change: ${answer.trim().slice(0, 500)}`);
      }
    }
  }

  /** The directory and its certificate folder: the platform's, never a symlink, owner-only. */
  private prepareDirectory() {
    for (const dir of [this.options.directory, join(this.options.directory, 'certs')]) {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      const stat = lstatSync(dir);
      if (!stat.isDirectory() || stat.uid !== process.getuid!())
        throw new Error(`${dir} must be a directory owned by the platform's user (HAProxy's configuration and certificates live there)`);
      chmodSync(dir, 0o700);
    }
  }

  /**
   * The current routes as HAProxy's files, the shape (everything but slot contents: when it is the
   * loaded one, the change is runtime commands), and those commands (null: the slots do not fit,
   * a reload sizes them). `fresh`: slots laid out anew (a start).
   */
  private render(fresh: boolean): { files: HaproxyFiles; shape: string; commands: string[] | null } {
    const directory = this.directory;
    const httpsPort = this.options.httpsPort ?? null;
    const routes: HaproxyRoute[] = [];
    const owners = new Map<string, Upstream>();
    const nextSlots = new Map<string, HaproxySlot[]>();
    const commands: string[] = [];
    const drains: string[] = [];
    let fits = true;
    const namedAddresses: string[] = [];
    for (const { host, upstreams } of this.table.snapshot()) {
      if (!isSafeHostname(host)) {
        this.logger?.warn({ host }, 'HAProxy edge: a route host name that is not a plain DNS name was left out');
        continue;
      }
      const backend = backendName(host);
      const owner = upstreams.find((u) => u.owner);
      if (owner) owners.set(backend, owner);
      const wanted = [
        ...new Set(
          upstreams.filter((u) => u.ready).flatMap((u) => (upstreamAddress(u.host, u.port) ? [upstreamAddress(u.host, u.port)!] : [])),
        ),
      ];
      // Only IP literals change at runtime; a name is resolved when HAProxy loads, so it is part of the shape.
      for (const a of wanted) if (!splitAddress(a)) namedAddresses.push(a);
      const slots = fresh ? [] : (this.slots.get(host) ?? []).map((s) => ({ ...s }));
      const isNew = fresh || !this.slots.has(host);
      slots.forEach((slot, i) => {
        if (slot.state === 'ready' && !wanted.includes(slot.address!)) {
          slot.state = 'drain';
          drains.push(`set server ${backend}/s${i} state drain`);
        } else if (slot.state === 'drain' && wanted.includes(slot.address!)) {
          slot.state = 'ready';
          commands.push(`set server ${backend}/s${i} state ready`);
        }
      });
      for (const address of wanted) {
        if (slots.some((s) => s.state === 'ready' && s.address === address)) continue;
        const free = slots.findIndex((s) => s.state === 'free');
        const at = splitAddress(address);
        if (free >= 0 && at && !isNew) {
          slots[free] = { address, state: 'ready' };
          commands.push(`set server ${backend}/s${free} addr ${at.ip} port ${at.port}`, `set server ${backend}/s${free} state ready`);
        } else {
          fits = false;
          slots.push({ address, state: 'ready' });
        }
      }
      if (isNew || !fits)
        while (slots.length < Math.max(MIN_SLOTS, 2 * slots.filter((s) => s.state !== 'free').length))
          slots.push({ address: null, state: 'free' });
      nextSlots.set(host, slots);
      const maintenance = directory?.maintenanceOf(owner?.owner?.environmentId);
      routes.push({
        host,
        backend,
        names: [],
        slots,
        ...(maintenance ? { maintenance: { window: maintenance, applicationId: owner?.owner?.applicationId } } : {}),
      });
    }
    const known = new Set(routes.map((r) => r.host));
    const byHost = new Map(routes.map((r) => [r.host, r]));
    const tls: HaproxyTlsName[] = [];
    const pemFiles = new Set<string>();
    for (const d of directory?.domains() ?? []) {
      const route = byHost.get(d.routeHostname);
      if (!route || !isSafeHostname(d.hostname) || known.has(d.hostname)) continue;
      route.names.push(d.hostname);
      const pem = httpsPort !== null ? directory!.certificatePem(d.hostname) : undefined;
      if (!pem) continue;
      const file = this.writeCertificate(d.hostname, `${pem.certificate.trim()}\n${pem.key.trim()}\n`);
      pemFiles.add(file);
      tls.push({ hostname: d.hostname, pemFile: file, hsts: d.hsts, redirect: d.httpsRedirect });
    }
    this.removeCertificatesBut(pemFiles);
    this.slots = nextSlots;
    this.owners = owners;
    const files = renderHaproxyConfig({
      dir: this.options.directory,
      worker: process.getuid!() === 0 ? this.workerIds() : null,
      listenHost: this.options.host,
      port: this.options.port,
      httpsPort,
      responderPort: this.responder.port,
      routes,
      tls,
    });
    const layout = routes.map((r) => `${r.host}:${r.slots.length}`).join(',');
    const shape = createHash('sha256')
      .update(files.config.replace(/^ {2}server s\d+ .*$/gm, ''))
      .update(JSON.stringify([...files.files]))
      .update(layout)
      .update(namedAddresses.join(','))
      .digest('hex');
    return { files, shape, commands: fits ? [...commands, ...drains] : null };
  }

  /** The workers' uid and primary gid (from /etc/passwd: HAProxy's `group` would need a group of the same name). */
  private workerIds(): { uid: number; gid: number } {
    const user = this.options.workerUser ?? 'haproxy';
    const line = readFileSync('/etc/passwd', 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`${user}:`));
    const [, , uid, gid] = line?.split(':') ?? [];
    if (!uid || !gid || Number(uid) === 0) throw new Error(`EDGE_HAPROXY_USER: ${user} is not an unprivileged user of this host`);
    return { uid: Number(uid), gid: Number(gid) };
  }

  /** The maps, list and pages (0600), then the configuration itself is written by the process on its check. */
  private writeFiles(files: HaproxyFiles) {
    const keep = new Set(files.files.keys());
    for (const [name, content] of files.files) {
      const file = join(this.options.directory, name);
      const partial = `${file}.partial`;
      rmSync(partial, { force: true });
      writeFileSync(partial, content, { mode: 0o600, flag: 'wx' });
      renameSync(partial, file);
    }
    for (const name of readdirSync(this.options.directory))
      if (name.startsWith('page-') && !keep.has(name)) rmSync(join(this.options.directory, name), { force: true });
  }

  /** One PEM file per name, named by its content's hash (a renewal is a new file, read at the reload). */
  private writeCertificate(hostname: string, pem: string): string {
    const digest = createHash('sha256').update(hostname).update('\0').update(pem).digest('hex').slice(0, 32);
    const file = join(this.options.directory, 'certs', `${digest}.pem`);
    try {
      lstatSync(file);
      return file;
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

  /**
   * Starts HAProxy again when its master is gone (killed, crashed): on the current routes, slots and
   * certificates, in the chain of changes, never while the driver closes or hands HAProxy over. What the
   * dead workers counted since the last read is lost; the new ones are counted from zero.
   */
  private superviseMaster(): Promise<void> {
    if (this.restarting) return this.restarting;
    const next = this.applying.then(async () => {
      if (this.haproxy.masterPid() !== null || !this.isListening || this.keepServingOnClose) return;
      const gone = this.master?.pid ?? null;
      const { files, shape } = this.render(true);
      this.writeFiles(files);
      const { pid } = await this.haproxy.start(files.config);
      this.master = { pid, adopted: false };
      this.loadedShape = shape;
      this.counted = new Map();
      this.logger?.warn(
        { pid, previousPid: gone, configuration: this.haproxy.confPath },
        "HAProxy's master was gone: started HAProxy again",
      );
    });
    this.applying = next.catch(() => {});
    this.restarting = next.finally(() => (this.restarting = null));
    return this.restarting;
  }

  /**
   * Adds what each route's backend answered since the last read to its application's counters: by
   * status class from `show stat`, by latency bucket from the route's entry in the latency table (the
   * mean from the backend's average total time over its last 1,024 requests). Every worker is read,
   * those of earlier configurations too (they finish their requests after a reload), each against its
   * own last read. Backends are routes (never the client's Host); `record` false only takes the
   * starting point (what an adopted HAProxy served was counted before).
   */
  private async readCounters(record: boolean) {
    const { workers, oldWorkers } = await this.haproxy.procs();
    const seen = new Map<number, Map<string, BackendCounts>>();
    for (const pid of [...oldWorkers, ...workers]) {
      // The table first: a response counted in it by the time `show stat` is read is in both (its class is never short).
      const table = await this.haproxy.command(`@!${pid} show table ${LATENCY_TABLE}`).catch(() => null);
      const rows = parseStatCsv(await this.haproxy.command(`@!${pid} show stat -1 2 -1`).catch(() => ''));
      const last = this.counted.get(pid);
      if (rows.length === 0 || table === null) {
        // Gone meanwhile, or one read failed: its last totals stay the baseline, so nothing it counted is added twice.
        if (last) seen.set(pid, last);
        continue;
      }
      const buckets = parseTableCounters(table, BUCKETS);
      const now = new Map<string, BackendCounts>();
      seen.set(pid, now);
      for (const row of rows) {
        if (!row.pxname?.startsWith('r_')) continue;
        const counts = {
          classes: STATUS_CLASSES.map((c) => Number(row[c]) || 0),
          buckets: buckets.get(row.pxname) ?? new Array<number>(BUCKETS).fill(0),
        };
        now.set(row.pxname, counts);
        const upstream = this.owners.get(row.pxname);
        if (!record || !upstream?.owner || !this.stats) continue;
        // A worker first seen now started since the last read: all it counted is new.
        const before = last?.get(row.pxname);
        const classes = counts.classes.map((n, i) => Math.max(0, n - (before?.classes[i] ?? 0)));
        const newBuckets = counts.buckets.map((n, i) => Math.max(0, n - (before?.buckets[i] ?? 0)));
        const requests = classes.reduce((a, b) => a + b, 0);
        if (requests === 0 && newBuckets.every((n) => n === 0)) continue;
        const ttime = Number(row.ttime) || 0;
        this.stats.recordTotals(upstream.statsKey!, upstream.owner, { classes, buckets: newBuckets, latencySumMs: ttime * requests });
      }
    }
    this.counted = seen;
  }
}
