import { reportDrain } from './drain-report.js';
import { sql } from 'kysely';
import type { Db } from '../db/database.js';
import { workerAlive } from '../jobs/dead-workers.js';
import type { EdgeDriver } from '../edge/edge-driver.js';
import { EdgeRoutes } from '../edge/edge-routes.js';
import type { Upstream } from '../edge/route-table.js';
import { waitHealthy } from './health-check.js';
import { exitOf, hintFor, OutputTail, type DeployDiagnosis, type FailureReason, type ProbeResult } from './diagnosis.js';
import type { AppUsage, RuntimeLogger } from './application-runtime.js';
import type { AdoptionRecord, InstanceLabels, InstanceOutput, InstanceSpec, InstanceStatus, ResourceUsage, RuntimeDriver } from './port.js';

export interface HealthCheck {
  path: string;
  /** Host header for the probe (`health_check_host`), or null. */
  host: string | null;
}

export interface RuntimeServiceOptions {
  /** Longest wait for in-flight requests to a retired instance before stopping it. */
  drainTimeoutMs?: number;
  /** Deadline for a restarted instance to answer its health check again. */
  restartHealthTimeoutMs?: number;
  workerId?: string | null;
  logger?: RuntimeLogger;
  /** Runs just before the router listens (an edge in this process takes over from what served before it). */
  beforeListen?: () => Promise<void>;
}

const silent: RuntimeLogger = { info() {}, warn() {}, error() {} };

/** Crashes kept on a deployment record (the latest ones). */
const CRASHES_KEPT = 20;

/** A process without a health check counts as started once it has run this long. */
const NON_WEB_SETTLE_MS = 300;

/**
 * The platform side of the runtime: runs instances through a driver, records them in the
 * `instances` table, health-checks web instances (again after every crash restart), and
 * publishes healthy ones to the router. Driver-neutral: the deployments module decides
 * what to run; this decides how it is tracked and routed.
 */
export class RuntimeService {
  private readonly health = new Map<string, HealthCheck>();
  /** Instances whose health is known good (router-ready); others are skipped by the router. */
  private readonly healthy = new Set<string>();
  /** Per-instance chain of row writes, so events are recorded in order. */
  private readonly writes = new Map<string, Promise<void>>();
  /** Each instance's last lines of output, for a failure's report. */
  private readonly tails = new OutputTail();
  /** What each web instance's health check last got. */
  private readonly lastProbe = new Map<string, ProbeResult>();
  /** When each instance first answered healthy (epoch ms). */
  private readonly healthySince = new Map<string, number>();
  /** Following some instances' output for a while (a rollout's deployment log). */
  private readonly outputFollowers = new Set<(o: InstanceOutput) => void>();
  /** Each instance's last lines when it last crashed (a restart's output comes after). */
  private readonly crashOutput = new Map<string, string[]>();
  /** Waiting for a crash of one of their instances (the stability window). */
  private readonly crashWatchers = new Set<(status: InstanceStatus) => void>();
  private logger: RuntimeLogger;
  private workerId: () => string | null;
  private closing = false;
  private keepServing = false;
  /** The routes in PostgreSQL, for edge processes of their own (`SLIPWAY_ROLE=edge`). */
  private readonly routes: EdgeRoutes;

  constructor(
    private readonly db: Db,
    readonly driver: RuntimeDriver,
    readonly router: EdgeDriver,
    private readonly options: RuntimeServiceOptions = {},
  ) {
    this.logger = options.logger ?? silent;
    this.routes = new EdgeRoutes(db);
    this.workerId = () => options.workerId ?? null;
    driver.onChange((status) => this.onChange(status));
    // The platform's own lines (`[slipway] web.1 exited …`) are not the instance's output.
    driver.onOutput((o) => {
      if (!o.line.startsWith('[slipway] ')) this.tails.add(o.instanceId, o.line);
      for (const follower of [...this.outputFollowers]) follower(o);
    });
  }

  /** Which worker process runs the instances (recorded on each row); read when an instance starts. */
  setWorkerId(source: () => string | null) {
    this.workerId = source;
  }

  setLogger(logger: RuntimeLogger) {
    this.logger = logger;
  }

  /** Starts the router (when not yet listening) and ends processes a dead platform left behind. */
  async start(): Promise<void> {
    if (!this.router.listening) {
      await this.options.beforeListen?.();
      await this.router.listen();
    }
    await this.reapLeftovers();
  }

  /**
   * An `instances` row not run by this process nor by another live worker is a leftover of a
   * dead one: its process (if it survived on this machine) is ended and the row removed.
   * Instances of live workers stay theirs (a second worker starting must not kill them).
   */
  async reapLeftovers(): Promise<void> {
    const mine = new Set(this.driver.list().map((s) => s.id));
    const rows = await this.db
      .selectFrom('instances')
      .leftJoin('workers', 'workers.id', 'instances.worker_id')
      .select([
        'instances.id',
        'instances.pid',
        'instances.pid_start_ticks',
        'instances.application_id',
        'instances.environment_id',
        'instances.deployment_id',
        'instances.port',
        'instances.restart_count',
        'instances.last_exit',
        'workers.hostname',
        'workers.pid as worker_pid',
        'workers.heartbeat_at',
        'workers.stopped_at',
      ])
      .execute();
    const ownedByLiveWorker = (r: (typeof rows)[number]) =>
      r.hostname !== null &&
      r.worker_pid !== null &&
      r.heartbeat_at !== null &&
      workerAlive({ hostname: r.hostname, pid: r.worker_pid, heartbeat_at: r.heartbeat_at, stopped_at: r.stopped_at });
    const unowned = rows.filter((r) => !mine.has(r.id) && !ownedByLiveWorker(r));
    // Still running as recorded and of the serving deployment: kept for the reconcile that adopts them.
    const current = await this.currentDeployments(unowned);
    const leftovers: typeof unowned = [];
    for (const r of unowned) {
      const keep = r.deployment_id !== null && current.has(r.deployment_id) && (await this.driver.adoptable?.(adoptionRecord(r)));
      if (!keep) leftovers.push(r);
    }
    if (unowned.length > leftovers.length) {
      this.logger.info(
        { count: unowned.length - leftovers.length },
        'instances of a previous platform process still run; they are adopted',
      );
    }
    if (leftovers.length === 0) return;
    await this.driver.reap(leftovers);
    await this.db
      .deleteFrom('instances')
      .where(
        'id',
        'in',
        leftovers.map((r) => r.id),
      )
      .execute();
    this.logger.info({ count: leftovers.length }, 'removed instances left by a previous platform process');
  }

  /** Of these rows' deployments, those that serve their environment now (the latest complete one). */
  private async currentDeployments(rows: Array<{ application_id: string; environment_id: string }>): Promise<Set<string>> {
    const current = new Set<string>();
    const seen = new Set<string>();
    for (const r of rows) {
      const key = `${r.application_id}/${r.environment_id}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const row = await this.db
        .selectFrom('deployments')
        .select('id')
        .where('application_id', '=', r.application_id)
        .where('environment_id', '=', r.environment_id)
        .where('status', '=', 'complete')
        .orderBy('finished_at', 'desc')
        .orderBy('created_at', 'desc')
        .limit(1)
        .executeTakeFirst();
      if (row) current.add(row.id);
    }
    return current;
  }

  /**
   * Takes over the instances of an application environment that a previous platform process
   * started and that still run (see `reapLeftovers`): the serving deployment's are adopted
   * (same id, pid, port and restart count; their output followed again, restarted when they
   * crash), others and those not running as recorded are ended. Each is first claimed in its
   * row, so two workers never adopt the same one. Returns the adopted instances.
   */
  async adopt(
    applicationId: string,
    environmentId: string,
    deploymentId: string,
    specFor: (row: { id: string; processType: string; ordinal: number }) => InstanceSpec | null | Promise<InstanceSpec | null>,
    check: HealthCheck,
  ): Promise<InstanceStatus[]> {
    const adopt = this.driver.adopt?.bind(this.driver);
    if (!adopt) return [];
    const me = this.workerId();
    const mine = new Set(this.driver.list().map((s) => s.id));
    const rows = await this.db
      .selectFrom('instances')
      .leftJoin('workers', 'workers.id', 'instances.worker_id')
      .select([
        'instances.id',
        'instances.pid',
        'instances.pid_start_ticks',
        'instances.deployment_id',
        'instances.process_type',
        'instances.ordinal',
        'instances.port',
        'instances.restart_count',
        'instances.last_exit',
        'instances.worker_id',
        'workers.hostname',
        'workers.pid as worker_pid',
        'workers.heartbeat_at',
        'workers.stopped_at',
      ])
      .where('instances.application_id', '=', applicationId)
      .where('instances.environment_id', '=', environmentId)
      .execute();
    const adopted: InstanceStatus[] = [];
    for (const r of rows) {
      // This process's own (being launched) and a live worker's stay theirs.
      if (mine.has(r.id) || (me !== null && r.worker_id === me)) continue;
      if (
        r.hostname !== null &&
        r.worker_pid !== null &&
        r.heartbeat_at !== null &&
        workerAlive({ hostname: r.hostname, pid: r.worker_pid, heartbeat_at: r.heartbeat_at, stopped_at: r.stopped_at })
      )
        continue;
      const claimed = await this.db
        .updateTable('instances')
        .set({ worker_id: me, updated_at: sql`now()` })
        .where('id', '=', r.id)
        .where(sql<boolean>`worker_id IS NOT DISTINCT FROM ${r.worker_id}`)
        .executeTakeFirst();
      if (Number(claimed.numUpdatedRows) === 0) continue; // another worker took it
      // A spec that cannot be made (a volume's disk that will not mount) ends the instance like a stale one.
      const spec =
        r.deployment_id === deploymentId
          ? await Promise.resolve()
              .then(() => specFor({ id: r.id, processType: r.process_type, ordinal: r.ordinal }))
              .catch(() => null)
          : null;
      const status = spec ? await adopt(spec, adoptionRecord(r)).catch(() => null) : null;
      if (!status) {
        await this.driver.reap([{ id: r.id, pid: r.pid }]);
        await this.db.deleteFrom('instances').where('id', '=', r.id).execute();
        continue;
      }
      if (spec!.listen) this.health.set(r.id, check);
      adopted.push(status);
    }
    if (adopted.length > 0) this.logger.info({ applicationId, environmentId, count: adopted.length }, 'adopted running instances');
    return adopted;
  }

  /** Launches instances and records them; web ones are not routed until `waitHealthy` passes. */
  async launch(specs: InstanceSpec[], check: HealthCheck): Promise<InstanceStatus[]> {
    const started: InstanceStatus[] = [];
    for (const spec of specs) {
      await this.db
        .insertInto('instances')
        .values({
          id: spec.id,
          application_id: spec.labels.applicationId,
          environment_id: spec.labels.environmentId,
          release_id: spec.labels.releaseId,
          deployment_id: spec.labels.deploymentId,
          process_type: spec.labels.processType,
          ordinal: spec.labels.ordinal,
          state: 'starting',
          worker_id: this.workerId(),
        })
        .execute();
      if (spec.listen) this.health.set(spec.id, check);
      try {
        started.push(await this.driver.start(spec));
      } catch (err) {
        await this.db.deleteFrom('instances').where('id', '=', spec.id).execute();
        throw err;
      }
    }
    return started;
  }

  /**
   * Waits until every web instance answers 2xx on the health check by the deadline; other
   * processes must survive their first NON_WEB_SETTLE_MS. Returns the ids that failed.
   */
  async waitHealthy(
    ids: string[],
    deadline: number,
    shouldStop: () => boolean = () => false,
    options: { failOnCrash?: boolean } = {},
  ): Promise<string[]> {
    const crashed = (id: string) => {
      const s = this.driver.status(id);
      return !s || s.state === 'crashed' || s.restartCount > 0;
    };
    // A rollout stops waiting at the first crash of any of its instances: reported within seconds, not at the deadline.
    let failedEarly = false;
    const results = await Promise.all(
      ids.map(async (id) => {
        const check = this.health.get(id);
        if (!check) {
          // Not a web process: it counts once it has run for a moment without crashing.
          await new Promise((r) => setTimeout(r, Math.max(0, Math.min(NON_WEB_SETTLE_MS, deadline - Date.now()))));
          const s = this.driver.status(id);
          const ok = Boolean(s && s.state === 'starting' && s.restartCount === 0);
          if (!ok && options.failOnCrash) failedEarly = true;
          return { id, ok };
        }
        const stop = options.failOnCrash
          ? () => {
              if (crashed(id)) failedEarly = true;
              return shouldStop() || failedEarly;
            }
          : shouldStop;
        const ok = await this.healthCheck(id, check, deadline, stop);
        return { id, ok };
      }),
    );
    return results.filter((r) => !r.ok).map((r) => r.id);
  }

  private async healthCheck(id: string, check: HealthCheck, deadline: number, shouldStop: () => boolean): Promise<boolean> {
    const s = this.driver.status(id);
    if (!s || s.port === null || s.host === null) return false;
    const ok = await waitHealthy(
      { host: s.host, port: s.port, path: check.path, hostHeader: check.host },
      deadline,
      () => shouldStop() || !this.driver.status(id),
      (result) => this.lastProbe.set(id, result),
    );
    if (ok) this.markHealthy(id);
    return ok;
  }

  /** Calls `listener` with every line of these instances' output until the returned function is called. */
  followOutput(ids: Set<string>, listener: (o: InstanceOutput) => void): () => void {
    const follower = (o: InstanceOutput) => {
      if (ids.has(o.instanceId)) listener(o);
    };
    this.outputFollowers.add(follower);
    return () => this.outputFollowers.delete(follower);
  }

  /**
   * The stability window: resolves with the first of `ids` that crashes within `ms`, or null
   * when all kept running (or `signal` aborted the wait).
   */
  watchStable(ids: string[], ms: number, signal: AbortSignal): Promise<InstanceStatus | null> {
    const watched = new Set(ids);
    const already = ids.map((id) => this.driver.status(id)).find((s) => s && (s.state === 'crashed' || s.restartCount > 0));
    if (already || ms <= 0 || signal.aborted) return Promise.resolve(already ?? null);
    return new Promise((resolve) => {
      const done = (result: InstanceStatus | null) => {
        clearTimeout(timer);
        this.crashWatchers.delete(watcher);
        signal.removeEventListener('abort', aborted);
        resolve(result);
      };
      const watcher = (status: InstanceStatus) => {
        if (watched.has(status.id) && status.state === 'crashed') done(status);
      };
      const aborted = () => done(null);
      const timer = setTimeout(() => done(null), ms);
      this.crashWatchers.add(watcher);
      signal.addEventListener('abort', aborted);
    });
  }

  /**
   * What is known of a failed instance, for its deployment's `failure`: how it ended, what its
   * health check last got, what it listens on, its last lines of output and a hint.
   */
  async diagnose(id: string, reason: FailureReason, healthPath: string): Promise<DeployDiagnosis | null> {
    const s = this.driver.status(id);
    if (!s) return null;
    const web = this.health.has(id);
    const probe = this.lastProbe.get(id);
    const listening =
      s.port !== null && reason === 'health_check_timeout'
        ? ((await this.driver.listening?.(id).catch(() => null)) ?? {
            ports: null,
            checked: 'this runtime cannot look at listening sockets',
          })
        : { ports: null, checked: 'not checked: the process had exited' };
    const since = this.healthySince.get(id);
    const facts: Omit<DeployDiagnosis, 'hint'> = {
      reason,
      instance: label(s.labels),
      process_type: s.labels.processType,
      exit: reason === 'health_check_timeout' ? null : exitOf(s.lastExit),
      port: s.port,
      health_check:
        web && s.port !== null
          ? { path: healthPath, port: s.port, result: probe?.result ?? 'not checked yet', status: probe?.status ?? null }
          : null,
      listening_ports: listening.ports,
      listening_checked: listening.checked,
      seconds_after_healthy: since !== undefined ? Math.round((Date.now() - since) / 100) / 10 : null,
      output: reason === 'health_check_timeout' ? this.tails.of(id) : (this.crashOutput.get(id) ?? this.tails.of(id)),
    };
    return { ...facts, hint: hintFor(facts) };
  }

  private markHealthy(id: string) {
    if (!this.healthySince.has(id)) this.healthySince.set(id, Date.now());
    this.healthy.add(id);
    this.setReady(id, true);
    this.record(id, { state: 'healthy' });
  }

  /** An instance joins or leaves its routes (crash, healthy again) on every edge. */
  private setReady(id: string, ready: boolean) {
    const hosts = this.router.table.hostsOf(id);
    this.router.table.setReady(id, ready);
    if (hosts.length === 0) return;
    void this.applyRoutes(hosts).catch((err) => {
      if (!this.closing) this.logger.error({ err, instance: id }, 'updating the edge failed');
    });
  }

  /** Makes the table live on this process's edge and writes the hosts' routes for the other edge processes. */
  private async applyRoutes(hosts: string[]) {
    await Promise.all([this.router.apply(), this.routes.publish(this.router.table, hosts)]);
  }

  /** Replaces the host's route with these web instances in one step; resolves once every edge follows it. */
  async publish(hostname: string, ids: string[]) {
    const upstreams: Upstream[] = [];
    for (const id of ids) {
      const s = this.driver.status(id);
      if (s?.host && s.port !== null) {
        const owner = { applicationId: s.labels.applicationId, environmentId: s.labels.environmentId, processType: s.labels.processType };
        upstreams.push({ instanceId: id, host: s.host, port: s.port, owner });
      }
      this.router.table.setReady(id, this.healthy.has(id));
    }
    this.router.table.set(hostname, upstreams);
    await this.applyRoutes([hostname]);
  }

  /** Takes these names off every edge, in one change. */
  async unpublish(hostnames: string[]) {
    if (hostnames.length === 0) return;
    for (const hostname of hostnames) this.router.table.delete(hostname);
    await this.applyRoutes(hostnames);
  }

  /**
   * Stops instances once requests already sent to them have finished (bounded). With `report`,
   * an instance that still has open connections is told in lines (a deployment's log) while it
   * drains, every few seconds, and once it has drained.
   */
  async retire(ids: string[], report?: (line: string) => void): Promise<void> {
    if (ids.length === 0) return;
    const timeoutMs = this.options.drainTimeoutMs ?? 30_000;
    const drained = Promise.all([this.router.drain(ids, timeoutMs), this.routes.drained(timeoutMs)]);
    if (report && this.router.openConnections) await reportDrain(await this.instanceNames(ids), drained, timeoutMs, this.router, report);
    else await drained;
    await Promise.all(ids.map((id) => this.driver.stop(id)));
    await Promise.all(ids.map((id) => this.writes.get(id)));
    await this.db.deleteFrom('instances').where('id', 'in', ids).execute();
    for (const id of ids) this.forget(id);
    this.router.table.forget(ids);
  }

  /** `web.1 (v3)` for each instance: its process, ordinal and release version. */
  private async instanceNames(ids: string[]): Promise<Map<string, string>> {
    const statuses = ids.map((id) => ({ id, status: this.driver.status(id) }));
    const releaseIds = [...new Set(statuses.flatMap(({ status }) => (status ? [status.labels.releaseId] : [])))];
    const versions = new Map(
      releaseIds.length === 0
        ? []
        : (await this.db.selectFrom('releases').select(['id', 'version']).where('id', 'in', releaseIds).execute()).map((r) => [
            r.id,
            r.version,
          ]),
    );
    return new Map(
      statuses.map(({ id, status }) => {
        if (!status) return [id, `instance ${id}`];
        const version = versions.get(status.labels.releaseId);
        return [id, `${status.labels.processType}.${status.labels.ordinal}${version !== undefined ? ` (v${version})` : ''}`];
      }),
    );
  }

  private forget(id: string) {
    this.health.delete(id);
    this.healthy.delete(id);
    this.writes.delete(id);
    this.tails.forget(id);
    this.lastProbe.delete(id);
    this.healthySince.delete(id);
    this.crashOutput.delete(id);
  }

  /** Instances this runtime runs for an application's environment (optionally one deployment). */
  instancesOf(applicationId: string, environmentId: string, deploymentId?: string): InstanceStatus[] {
    return this.driver
      .list()
      .filter(
        (s) =>
          s.labels.applicationId === applicationId &&
          s.labels.environmentId === environmentId &&
          (deploymentId === undefined || s.labels.deploymentId === deploymentId),
      );
  }

  isHealthy(id: string): boolean {
    return this.healthy.has(id);
  }

  /** CPU, memory, instance and restart counts per application environment. */
  async usage(): Promise<AppUsage[]> {
    const perInstance: Map<string, ResourceUsage> = await this.driver.usage();
    const byApp = new Map<string, AppUsage>();
    for (const s of this.driver.list()) {
      if (s.state === 'stopped') continue;
      const key = `${s.labels.applicationId}/${s.labels.environmentId}`;
      const acc = byApp.get(key) ?? {
        applicationId: s.labels.applicationId,
        environmentId: s.labels.environmentId,
        cpuMillicores: 0,
        memoryBytes: 0,
        podCount: 0,
        restartCount: 0,
        memoryPercentMax: null,
        processes: {},
      };
      const u = perInstance.get(s.id);
      // Each instance against its own limit: a sum over instances would hide the one about to be killed.
      if (u?.memoryLimitBytes) acc.memoryPercentMax = Math.max(acc.memoryPercentMax ?? 0, (u.memoryBytes / u.memoryLimitBytes) * 100);
      acc.cpuMillicores += u?.cpuMillicores ?? 0;
      acc.memoryBytes += u?.memoryBytes ?? 0;
      acc.podCount += 1;
      acc.restartCount += s.restartCount;
      const perProcess = (acc.processes![s.labels.processType] ??= { cpuMillicores: 0, podCount: 0 });
      perProcess.cpuMillicores = (perProcess.cpuMillicores ?? 0) + (u?.cpuMillicores ?? 0);
      perProcess.podCount += 1;
      byApp.set(key, acc);
    }
    return [...byApp.values()];
  }

  private readonly shutdownHooks: Array<() => Promise<void> | void> = [];

  /** Runs before the instances stop (e.g. the metrics sampler stops first). */
  onShutdown(hook: () => Promise<void> | void) {
    this.shutdownHooks.push(hook);
  }

  /**
   * With `keepServing`, `shutdown` stops this process's control of the instances but leaves them
   * running, their rows and routes in place (an upgrade: the next start adopts them).
   */
  keepServingOnShutdown(keep = true) {
    this.keepServing = keep && typeof this.driver.detach === 'function';
  }

  /** Stops every instance (they come back from the database on the next start), or only lets go of them (see keepServingOnShutdown). */
  async shutdown(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    for (const hook of this.shutdownHooks) await hook();
    if (this.keepServing) {
      await this.driver.detach!();
      await Promise.all([...this.writes.values()]);
      this.logger.info({ instances: this.driver.list().length }, 'control plane stopped; instances keep serving');
      await this.router.close();
      return;
    }
    const ids = this.driver.list().map((s) => s.id);
    await this.driver.shutdown();
    await Promise.all([...this.writes.values()]);
    if (ids.length > 0)
      await this.db
        .deleteFrom('instances')
        .where('id', 'in', ids)
        .execute()
        // Shutdown: rows left behind are removed by the next start's leftover sweep.
        .catch(() => {});
    await this.router.close();
  }

  private onChange(status: InstanceStatus) {
    if (status.state === 'crashed') {
      this.healthy.delete(status.id);
      this.setReady(status.id, false);
      this.logger.warn({ instance: status.id, process: label(status.labels), exit: status.lastExit }, 'instance crashed');
      this.recordCrash(status);
      this.crashOutput.set(status.id, this.tails.of(status.id));
      for (const watcher of [...this.crashWatchers]) watcher(status);
    }
    if (status.state === 'stopped') return;
    this.record(status.id, {
      state: status.state,
      pid: status.pid,
      pid_start_ticks: status.pid === null ? null : (this.driver.startTicksOf?.(status.id) ?? null),
      host: status.host,
      port: status.port,
      restart_count: status.restartCount,
      last_exit: status.lastExit,
      ...(status.state === 'crashed' ? { last_exit_at: new Date() } : {}),
    });
    if (status.state === 'starting' && status.restartCount > 0 && !this.closing) {
      // A restarted web instance rejoins the route only once it answers its health check again.
      const check = this.health.get(status.id);
      if (check) {
        const deadline = Date.now() + (this.options.restartHealthTimeoutMs ?? 10 * 60_000);
        void this.healthCheck(status.id, check, deadline, () => this.closing || this.driver.status(status.id)?.state !== 'starting');
      } else {
        this.record(status.id, { state: 'running' });
      }
    } else if (status.state === 'starting' && !this.health.has(status.id)) {
      this.record(status.id, { state: 'running' });
    }
  }

  /**
   * A crash shows on the deployment that started the instance (`deploy_metadata.crashes`, the
   * latest CRASHES_KEPT): what ended it, e.g. `OOM: exceeded 384 MiB of m1.small`.
   */
  private recordCrash(status: InstanceStatus) {
    const crash = JSON.stringify({
      process: label(status.labels),
      instance_id: status.id,
      reason: status.lastExit,
      at: new Date().toISOString(),
    });
    const previous = this.writes.get(status.id) ?? Promise.resolve();
    const next = previous.then(async () => {
      try {
        await sql`
          UPDATE deployments SET deploy_metadata = jsonb_set(coalesce(deploy_metadata, '{}'::jsonb), '{crashes}',
            coalesce((SELECT jsonb_agg(c ORDER BY n) FROM (SELECT c, n FROM jsonb_array_elements(deploy_metadata->'crashes') WITH ORDINALITY AS e(c, n)
              ORDER BY n DESC LIMIT ${CRASHES_KEPT - 1}) kept), '[]'::jsonb) || jsonb_build_array(${crash}::jsonb)),
            updated_at = now()
          WHERE id = ${status.labels.deploymentId}`.execute(this.db);
      } catch (err) {
        if (!this.closing) this.logger.error({ err, instance: status.id }, 'recording an instance crash failed');
      }
    });
    this.writes.set(status.id, next);
  }

  private record(
    id: string,
    values: {
      state?: InstanceStatus['state'] | 'healthy';
      pid?: number | null;
      pid_start_ticks?: string | null;
      host?: string | null;
      port?: number | null;
      restart_count?: number;
      last_exit?: string | null;
      last_exit_at?: Date;
    },
  ) {
    const previous = this.writes.get(id) ?? Promise.resolve();
    const next = previous.then(async () => {
      try {
        await this.db
          .updateTable('instances')
          .set({ ...values, updated_at: sql`now()` })
          .where('id', '=', id)
          .execute();
      } catch (err) {
        if (!this.closing) this.logger.error({ err, instance: id }, 'recording an instance state failed');
      }
    });
    this.writes.set(id, next);
  }
}

export type { AppUsage, RuntimeLogger };

function adoptionRecord(r: {
  id: string;
  pid: number | null;
  pid_start_ticks: string | null;
  port: number | null;
  restart_count: number;
  last_exit: string | null;
}): AdoptionRecord {
  return { id: r.id, pid: r.pid, startTicks: r.pid_start_ticks, port: r.port, restartCount: r.restart_count, lastExit: r.last_exit };
}

export function label(l: InstanceLabels): string {
  return `${l.processType}.${l.ordinal}`;
}
