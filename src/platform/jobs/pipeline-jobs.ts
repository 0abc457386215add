import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { sql, type RawBuilder } from 'kysely';
import PgBoss from 'pg-boss';
import { isDatabaseUnavailable } from '../db/availability.js';
import { databaseAvailability, sqlExecutorOf, type Db } from '../db/database.js';
import { deadWorkers } from './dead-workers.js';
import { AppError } from '../errors.js';
import {
  JobStore,
  jobInsertFrom,
  WORKER_AFFINITY_SECONDS,
  type JobBudget,
  type JobPorts,
  type JobWait,
  type OrganizationLimits,
} from './job-store.js';
import { killOrphansOf, setWorkerMark } from './orphan-processes.js';
import type { JobHandler, JobInput, JobKind, JobKindOptions, Jobs, PipelineJobData } from './types.js';
import { Wakeup } from './wakeup.js';

export interface JobsLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface PipelineJobsOptions {
  /** Made by createDb: pg-boss runs its SQL on this pool too. */
  db: Db;
  /** Jobs run at once by this process's workers. */
  concurrency?: number;
  /** How often an idle worker looks for jobs (an enqueue in this process wakes it at once). */
  pollIntervalMs?: number;
  heartbeatIntervalMs?: number;
  /** A worker whose heartbeat is older than this is dead. */
  staleAfterMs?: number;
  /** How often the registered sweepers run (in processes with workers). */
  sweepIntervalMs?: number;
  /** How long stop() waits for running jobs after aborting them (and for side-queue jobs, at least a second). */
  stopTimeoutMs?: number;
  /** First delay before retrying a failed bookkeeping write (completing a job, …); doubles up to 5 s. */
  retryBaseMs?: number;
  /** Per-organization caps (defaults: no practical limit). */
  organizationLimits?: OrganizationLimits;
  /** What the job loop reads about applications (`applicationJobPorts`); none: no budgets, nothing held elsewhere. */
  ports?: JobPorts;
  logger?: JobsLogger;
}

/** The abort reason of a cancelled job (a stopping worker aborts with none). */
export class JobCancelled extends Error {}

/** Whether a job's signal was aborted by a cancel (not by its worker stopping). */
export function isCancelled(signal: AbortSignal): boolean {
  return signal.aborted && signal.reason instanceof JobCancelled;
}

const silent: JobsLogger = { info() {}, warn() {}, error() {} };
const MAX_RETRY_DELAY_MS = 5000;
/** Without ports: no organization, no application held elsewhere (tests of the loop alone). */
const noPorts: JobPorts = { budgetOf: async () => null, applicationsHeldElsewhere: async () => [] };

/** A queue beside the pipeline's: no per-application order; pg-boss retries a failed job with backoff. */
export interface SideQueueOptions {
  /** Tries after the first. */
  retryLimit: number;
  /** Seconds before the first retry; each later one waits about twice as long (pg-boss's retryBackoff). */
  retryDelaySeconds: number;
  /** Jobs of this queue one worker process runs at once. */
  concurrency?: number;
}

export type SideQueueHandler = (data: Record<string, unknown>, job: { id: string; retryCount: number }) => Promise<void>;

/** Runs a pg-boss statement on the caller's connection, so a job is queued in the caller's transaction. */
export interface SqlExecutor {
  executeSql(text: string, values: unknown[]): Promise<{ rows: unknown[] }>;
}

interface SideQueue {
  options: SideQueueOptions;
  handler: SideQueueHandler;
  created: Promise<void> | null;
  working: boolean;
}

interface Registration {
  handler: JobHandler;
  options: JobKindOptions;
}

/**
 * The pool as pg-boss sees it, until its stop ends. pg-boss settles a job when its handler
 * returns without awaiting the statement; a handler that outlives the stop (its job already
 * failed by the stop, to be retried) would settle on a pool its owner may have ended: an
 * unhandled rejection. After close() statements are never sent and never settle. Only such
 * unawaited settles can come after close() (PipelineJobs.stop waits for the others): nothing
 * waits on them.
 */
function closableExecutor(pool: SqlExecutor) {
  let closed = false;
  let inFlight = 0;
  return {
    executeSql(text: string, values: unknown[]): Promise<{ rows: unknown[] }> {
      if (closed) return new Promise(() => {});
      inFlight++;
      return pool.executeSql(text, values).finally(() => inFlight--);
    },
    /** Whether a statement is on its way (a fetch whose job is still to be handed back, a settle). */
    get busy() {
      return inFlight > 0;
    },
    close() {
      closed = true;
    },
  };
}

interface SideRun {
  executor: ReturnType<typeof closableExecutor>;
  stopping: boolean;
  running: number;
}

/**
 * Pipeline jobs in Slipway's own table (JobStore) with our own worker loop (see
 * JobStore.fetchNext for why), a heartbeat per worker process, and recovery of the jobs
 * of dead workers: their records are settled by the kind's `onInterrupted` and their
 * jobs failed (or put back), so nothing stays in progress forever or blocks a queue.
 * pg-boss 10, through its public API only, runs the side queues (webhook deliveries, …).
 */
export class PipelineJobs implements Jobs {
  private boss: PgBoss | null = null;
  /** The side queues of `boss`: its pool, whether its stop began, its handlers running. */
  private side: SideRun | null = null;
  /** The stop under way or done (a second stop() waits for it; start() waits for it, then clears it). */
  private stopRun: Promise<void> | null = null;
  private readonly store: JobStore;
  private readonly kinds = new Map<string, Registration>();
  private readonly logger: JobsLogger;
  private id: string | null = null;
  private abort = new AbortController();
  private loops: Promise<void>[] = [];
  private readonly wakeup = new Wakeup();
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private stopping = false;
  private sweepers: Array<{ sweep: () => Promise<unknown>; everyMs: number; lastRun: number }> = [];
  private lastSweep = 0;
  private sweeping: Promise<void> | null = null;
  private ticking = false;
  private readonly ports: JobPorts;
  private readonly sideQueues = new Map<string, SideQueue>();
  /** This process's running jobs, each with its own abort (a cancel stops one job, a stop all). */
  private readonly running = new Map<string, AbortController>();
  private readonly afterJobListeners: Array<(data: PipelineJobData, ok: boolean) => Promise<unknown>> = [];

  constructor(private readonly options: PipelineJobsOptions) {
    this.store = new JobStore(options.db, options.organizationLimits);
    this.logger = options.logger ?? silent;
    this.ports = options.ports ?? noPorts;
    // Settled jobs are kept a while (metrics, debugging), then deleted: the records keep their outcome.
    this.addSweeper(() => this.store.deleteSettled(), { everyMs: 60 * 60_000 });
  }

  get workerId() {
    return this.id;
  }

  /** Whether the job store is open (started and not stopped): enough to enqueue while the database answers. */
  get isOpen(): boolean {
    return this.boss !== null;
  }

  /** Opens the job store (pg-boss for the side queues, creating its schema when missing). Enough to enqueue. */
  async start(): Promise<void> {
    await this.stopRun;
    this.stopRun = null;
    if (this.boss) return;
    // pg-boss runs its SQL on our pool (one pool per process, sized by the API's needs).
    const pool = sqlExecutorOf(this.options.db);
    if (!pool) throw new Error('The job store needs a database made by createDb');
    const executor = closableExecutor(pool);
    const boss = new PgBoss({
      db: executor,
      schedule: false,
      application_name: 'slipway-jobs',
    });
    boss.on('error', (err) => {
      // Its pollers fail every half second while PostgreSQL is away: that is said once (bootstrap), not each time.
      if (isDatabaseUnavailable(err)) databaseAvailability(this.options.db).report(err);
      else this.logger.error({ err }, 'job store error');
    });
    await boss.start();
    if (this.stopRun) {
      // Stopped while it started: this pg-boss would be stopped by nobody.
      await boss.stop({ graceful: false, wait: true, timeout: 1000 }).catch(() => {});
      throw new Error('The job store was stopped while it started');
    }
    this.boss = boss;
    this.side = { executor, stopping: false, running: 0 };
    for (const name of this.sideQueues.keys()) await this.createSideQueue(name);
  }

  /**
   * Adds a queue of its own (webhook deliveries, …) with its handler; its jobs run in the
   * processes that run workers, through pg-boss's own fetch loop.
   */
  async addQueue(name: string, options: SideQueueOptions, handler: SideQueueHandler): Promise<void> {
    this.sideQueues.set(name, { options, handler, created: null, working: false });
    if (this.boss) await this.createSideQueue(name);
    if (this.id) await this.workSideQueue(name);
  }

  /** Queues a job on a side queue; with `executor`, inside the caller's transaction. */
  async sendTo(name: string, data: Record<string, unknown>, executor?: SqlExecutor): Promise<string> {
    const queue = this.sideQueues.get(name);
    if (!this.boss || !queue) throw new Error(`The job queue ${name} is not started`);
    const id = await this.boss.send(name, data, {
      retryLimit: queue.options.retryLimit,
      retryDelay: queue.options.retryDelaySeconds,
      retryBackoff: true,
      ...(executor ? { db: executor } : {}),
    });
    if (!id) throw new Error('The job store refused the job');
    return id;
  }

  /**
   * Queues a job on a side queue unless one was already queued in the current `seconds`-long slot
   * (pg-boss throttling): several processes asking for the same periodic job make one. Null when throttled.
   */
  async sendThrottled(name: string, data: Record<string, unknown>, seconds: number): Promise<string | null> {
    const queue = this.sideQueues.get(name);
    if (!this.boss || !queue) throw new Error(`The job queue ${name} is not started`);
    return this.boss.send(name, data, { retryLimit: queue.options.retryLimit, singletonSeconds: seconds, singletonKey: name });
  }

  private createSideQueue(name: string): Promise<void> {
    const queue = this.sideQueues.get(name)!;
    const boss = this.boss!;
    queue.created ??= this.options.db
      .transaction()
      .execute(async (trx) => {
        await sql`SELECT pg_advisory_xact_lock(hashtext(${`slipway.queue.${name}`}))`.execute(trx);
        if (!(await boss.getQueue(name))) {
          await boss.createQueue(name, {
            name,
            policy: 'standard',
            retryLimit: queue.options.retryLimit,
            retryDelay: queue.options.retryDelaySeconds,
            retryBackoff: true,
            expireInSeconds: 60 * 15,
          });
        }
      })
      .catch((err) => {
        queue.created = null;
        throw err;
      });
    return queue.created;
  }

  private async workSideQueue(name: string) {
    const queue = this.sideQueues.get(name)!;
    if (queue.working) return;
    queue.working = true;
    await this.createSideQueue(name);
    const boss = this.boss!;
    const side = this.side!;
    for (let i = 0; i < (queue.options.concurrency ?? 2); i++) {
      await boss.work<Record<string, unknown>>(
        name,
        { pollingIntervalSeconds: 0.5, batchSize: 1, includeMetadata: true },
        async ([job]) => {
          if (!job) return;
          const { retryCount = 0, retryLimit = 0 } = job as { retryCount?: number; retryLimit?: number };
          // Fetched once the stop began (pg-boss no longer waits for it): handed back at once, failed to be
          // retried; on its last try it runs instead (the stop waits for it until its deadline).
          if (side.stopping && retryCount < retryLimit) throw new Error('The worker process is stopping');
          side.running++;
          try {
            await queue.handler(job.data, { id: job.id, retryCount });
          } finally {
            side.running--;
          }
        },
      );
    }
  }

  register(kind: JobKind, handler: JobHandler, options: JobKindOptions = {}): void {
    this.kinds.set(kind, { handler, options });
    this.poke();
  }

  /**
   * Adds periodic maintenance run by this process's workers (at start, then about every
   * `sweepIntervalMs`, or at most every `everyMs` for work that need not run that often):
   * e.g. settling records whose job is gone, so none stays in progress.
   */
  addSweeper(sweep: () => Promise<unknown>, options: { everyMs?: number } = {}): void {
    this.sweepers.push({ sweep, everyMs: options.everyMs ?? 0, lastRun: 0 });
  }

  /** Ids of the pipeline jobs still waiting or running (records whose job is not among them are abandoned). */
  liveJobIds(): Promise<Set<string>> {
    return this.store.liveJobIds();
  }

  /**
   * Refuses (429) a new job of an application whose organization, or whose organization's
   * creator across all the organizations they created, or the whole site, already has its cap
   * of jobs waiting or running. Services call this before storing the job's record. Answers the
   * budget it read, which the job's data may carry so `enqueue` does not read it again.
   */
  async ensureRoom(applicationId: string): Promise<JobBudget | null> {
    const budget = await this.ports.budgetOf(applicationId);
    if (!budget) return null;
    const limits = this.options.organizationLimits;
    if (!limits) return budget;
    this.refuseOverCaps(await this.store.queuedFor(budget));
    return budget;
  }

  /**
   * Refuses (429) as `ensureRoom` does, from counts the caller read itself (`queuedCounts` in its
   * own statement, with its other checks).
   */
  refuseOverCaps(queued: { organization: number; owner: number; site: number }): void {
    const limits = this.options.organizationLimits;
    if (!limits) return;
    const later = 'try again when some have finished';
    if (queued.organization >= limits.queued)
      throw new AppError('RATE_LIMITED', `The organization already has ${limits.queued} pipeline jobs waiting or running; ${later}`);
    if (limits.ownerQueued !== undefined && queued.owner >= limits.ownerQueued)
      throw new AppError(
        'RATE_LIMITED',
        `The organizations created by this organization's creator already have ${limits.ownerQueued} pipeline jobs waiting or running ` +
          `together (the budget is per creating user, not per organization); ${later}`,
      );
    if (limits.siteQueued !== undefined && queued.site >= limits.siteQueued)
      throw new AppError('RATE_LIMITED', `The platform already has ${limits.siteQueued} pipeline jobs waiting or running; ${later}`);
  }

  /**
   * The job `enqueue` would queue, as one step of the caller's statement (`jobInsertFrom`: one
   * job per row of its CTE `source`), with the budget the caller read; it wakes the workers after.
   */
  enqueueFrom(kind: JobKind, data: JobInput & JobBudget, source: string): RawBuilder<{ id: string }> {
    if (!this.boss) throw new Error('The job store is not started');
    return jobInsertFrom({ ...data, kind }, source);
  }

  /** Why each of the given jobs still waits (those no longer waiting are left out). */
  waits(jobIds: string[]): Promise<Map<string, JobWait>> {
    return this.store.waits(jobIds);
  }

  /**
   * Cancels a job: a waiting one leaves the queue ('dequeued'); a running one has its signal
   * aborted with a JobCancelled reason, here at once or in its worker's process at its next
   * heartbeat ('stopping'); a settled one is left alone ('finished').
   */
  async cancel(jobId: string, message: string): Promise<'dequeued' | 'stopping' | 'finished'> {
    if (await this.store.dequeue(jobId, message)) {
      this.poke();
      return 'dequeued';
    }
    if (!(await this.store.requestCancel(jobId))) return 'finished';
    this.running.get(jobId)?.abort(new JobCancelled(message));
    return 'stopping';
  }

  /**
   * Runs `listener` after each pipeline job this process settles (e.g. collecting what an
   * application's deploy left unreferenced). Its failures are logged, never the job's.
   */
  afterJobs(listener: (data: PipelineJobData, ok: boolean) => Promise<unknown>): void {
    this.afterJobListeners.push(listener);
  }

  async enqueue(kind: JobKind, data: JobInput, transaction?: Db): Promise<string> {
    if (!this.boss) throw new Error('The job store is not started');
    const budget = data.organizationId && data.ownerId ? null : await this.ports.budgetOf(data.applicationId);
    const organizationId = data.organizationId ?? budget?.organizationId ?? null;
    const ownerId = data.ownerId ?? budget?.ownerId ?? organizationId;
    const id = await this.store.enqueue({ ...data, organizationId, ownerId, kind }, transaction);
    // A job queued in the caller's transaction is invisible until it commits: the caller wakes the workers then.
    if (!transaction) this.poke();
    return id;
  }

  /** Wakes this process's workers: after committing a transaction that queued a job (`enqueue(…, transaction)`). */
  wake(): void {
    this.poke();
  }

  /** Starts this process's workers: registers the worker, recovers dead workers' jobs, polls. */
  async startWorkers(): Promise<void> {
    if (!this.boss) await this.start();
    if (this.id) return;
    this.id = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
    setWorkerMark(this.id);
    this.stopping = false;
    this.abort = new AbortController();
    await this.store.registerWorker(this.id, hostname(), process.pid);
    await this.recover();
    await this.sweep();
    const heartbeatMs = this.options.heartbeatIntervalMs ?? 5000;
    this.heartbeatTimer = setInterval(() => void this.tick(), heartbeatMs);
    this.heartbeatTimer.unref();
    const concurrency = this.options.concurrency ?? 2;
    for (let i = 0; i < concurrency; i++) this.loops.push(this.loop());
    for (const name of this.sideQueues.keys()) await this.workSideQueue(name);
    this.logger.info({ workerId: this.id, concurrency }, 'pipeline workers started');
  }

  /** Stops the workers (running jobs see their signal aborted), then the job store. */
  stop(): Promise<void> {
    this.stopRun ??= this.stopOnce();
    return this.stopRun;
  }

  private async stopOnce(): Promise<void> {
    this.stopping = true;
    this.abort.abort();
    this.poke();
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    this.heartbeatTimer = null;
    const timeout = this.options.stopTimeoutMs ?? 10_000;
    const deadline = Date.now() + Math.max(timeout, 1000);
    const boss = this.boss;
    const side = this.side;
    if (side) side.stopping = true;
    // Side-queue jobs get as long (pg-boss waits a second at least); those still running then
    // are failed by pg-boss, to be retried. Its pool stays ours: a shutdown has nothing left to lose, so log and go on.
    const sideQueuesStopped = boss
      ?.stop({ graceful: true, wait: true, timeout })
      .catch((err) => this.logger.warn({ err }, 'stopping the job store failed'));
    await Promise.race([Promise.allSettled([...this.loops, this.sweeping]), new Promise((r) => setTimeout(r, timeout).unref())]);
    this.loops = [];
    if (this.id) {
      // Jobs still running past the timeout are settled by the next start's recovery; an
      // unrecorded stop only delays that until the heartbeat goes stale.
      await this.store.markStopped(this.id).catch((err) =>
        // Ctrl-C in a terminal reaches the embedded PostgreSQL too, which may stop first: expected, not an error.
        isDatabaseUnavailable(err)
          ? this.logger.warn(
              { reason: String((err as Error).message) },
              'the database stopped before this worker could record its stop; the next start settles it',
            )
          : this.logger.error({ err }, 'recording the worker as stopped failed'),
      );
      this.id = null;
    }
    this.boss = null;
    for (const queue of this.sideQueues.values()) {
      queue.working = false;
      queue.created = null;
    }
    this.side = null;
    if (!side) return;
    // Bounded: pg-boss's stop fails the jobs still running through the pool, which may be stalled.
    await Promise.race([sideQueuesStopped, sleep(Math.max(0, deadline - Date.now()) + 1000, undefined, { ref: false })]);
    // A fetch still on its way hands its job back, a handler that ended settles its job: both are sent
    // before the close (a turn of the event loop each: pg-boss issues them unawaited), within the deadline.
    const settling = () => side.executor.busy || side.running > 0;
    await nextTurn();
    while (settling() && Date.now() < deadline) {
      await sleep(20);
      await nextTurn();
    }
    side.executor.close();
  }

  /** Settles the jobs of dead workers now (also done on start and with every heartbeat). */
  async recover(): Promise<void> {
    if (!this.id) return;
    const staleMs = this.options.staleAfterMs ?? 30_000;
    const dead = await deadWorkers(this.store, this.id, staleMs);
    for (const run of await this.store.runsOf(dead)) {
      // Several live workers may recover at once: only the one that takes the run record settles it.
      if (!(await this.store.claimRun(run.job_id, run.worker_id))) continue;
      if (run.state === 'active') await this.settleInterrupted(run.job_id, run.data, run.worker_id);
    }
    const killed = await killOrphansOf(dead);
    if (killed > 0) this.logger.warn({ count: killed }, 'killed processes left running by a dead worker');
    for (const id of dead) await this.store.forgetWorker(id);
    for (const job of await this.store.orphanedActiveJobs(Math.ceil(staleMs / 1000))) {
      await this.settleInterrupted(job.id, job.data, null);
    }
  }

  private async settleInterrupted(jobId: string, data: PipelineJobData, workerId: string | null) {
    const registration = this.kinds.get(data.kind);
    let outcome: 'retry' | void = undefined;
    try {
      outcome = await registration?.options.onInterrupted?.(data, { jobId, workerId });
    } catch (err) {
      this.logger.error({ err, jobId, kind: data.kind }, 'settling an interrupted job failed');
    }
    if (outcome === 'retry') {
      await this.store.requeue(jobId);
      this.logger.warn({ jobId, kind: data.kind, applicationId: data.applicationId }, 'interrupted job queued again');
    } else {
      await this.store.failUnowned(jobId, 'interrupted: the worker running it stopped');
      this.logger.warn({ jobId, kind: data.kind, applicationId: data.applicationId }, 'interrupted job failed');
    }
    this.poke();
  }

  private async tick() {
    // Paused while the database is away; the first beat after it is back registers this worker again.
    if (!this.id || this.stopping || this.ticking || !databaseAvailability(this.options.db).isUp) return;
    this.ticking = true;
    try {
      const id = this.id;
      // A missed beat would soon make the others take this worker for dead: retried with backoff.
      if (
        !(await this.persist('recording the worker heartbeat', { workerId: id }, () => this.store.heartbeat(id, hostname(), process.pid)))
      )
        return;
      // A failed recovery step is logged below and redone by the next beat; a job whose run
      // record it already took is found again as an orphaned active job. Right after a database
      // outage every worker's heartbeat looks stale: the others get one staleness period to beat
      // again before any is taken for dead.
      // Cancels asked through another process.
      for (const jobId of await this.store.cancelRequested([...this.running.keys()]))
        this.running.get(jobId)?.abort(new JobCancelled('Cancelled'));
      const staleMs = this.options.staleAfterMs ?? 30_000;
      if (Date.now() - databaseAvailability(this.options.db).upSince >= staleMs) await this.recover();
      // Beside the beat, never inside it: a sweep may wait on slow work (a drill, an object store
      // that stopped answering), and a worker whose beat waits on it would be taken for dead.
      if (!this.sweeping && Date.now() - this.lastSweep >= (this.options.sweepIntervalMs ?? 60_000))
        this.sweeping = this.sweep().finally(() => (this.sweeping = null));
    } catch (err) {
      this.logger.error({ err }, 'worker heartbeat failed');
    } finally {
      this.ticking = false;
    }
  }

  private async sweep() {
    this.lastSweep = Date.now();
    for (const sweeper of this.sweepers) {
      if (this.stopping) return;
      if (Date.now() - sweeper.lastRun < sweeper.everyMs) continue;
      sweeper.lastRun = Date.now();
      try {
        await sweeper.sweep();
      } catch (err) {
        this.logger.error({ err }, 'pipeline sweep failed');
      }
    }
  }

  private poke() {
    this.wakeup.wakeAll();
  }

  private async loop(): Promise<void> {
    const pollMs = this.options.pollIntervalMs ?? 1000;
    const availability = databaseAvailability(this.options.db);
    while (!this.stopping) {
      // Paused while the database is away (issue 37): no job can be fetched, and failing to every poll says nothing new.
      if (!availability.isUp) {
        await availability.whenUp(this.abort.signal);
        continue;
      }
      let job;
      try {
        const heldElsewhere = await this.ports.applicationsHeldElsewhere(this.id!, WORKER_AFFINITY_SECONDS);
        job = await this.store.fetchNext(this.id!, [...this.kinds.keys()], heldElsewhere);
      } catch (err) {
        if (this.stopping) break;
        if (isDatabaseUnavailable(err)) availability.report(err);
        else this.logger.error({ err }, 'fetching a pipeline job failed');
      }
      if (!job) {
        await this.wakeup.sleep(pollMs);
        continue;
      }
      await this.run(job.id, job.data);
    }
  }

  private async run(jobId: string, data: PipelineJobData) {
    const registration = this.kinds.get(data.kind)!;
    const started = Date.now();
    this.logger.info({ jobId, kind: data.kind, applicationId: data.applicationId }, 'pipeline job started');
    let failure: unknown = null;
    const controller = new AbortController();
    const stop = () => controller.abort(this.abort.signal.reason);
    this.abort.signal.addEventListener('abort', stop, { once: true });
    this.running.set(jobId, controller);
    try {
      await registration.handler(data, { jobId, workerId: this.id!, signal: controller.signal });
      if (controller.signal.reason instanceof JobCancelled) failure = controller.signal.reason;
    } catch (err) {
      failure = err;
      this.logger.error({ err, jobId, kind: data.kind }, 'pipeline job failed');
    } finally {
      this.running.delete(jobId);
      this.abort.signal.removeEventListener('abort', stop);
    }
    // The job's outcome must reach the store, or it would stay `active` and hold up its
    // application: retried until it does (or this process stops: recovery settles it then).
    const settled =
      failure === null
        ? await this.persist('completing a pipeline job', { jobId }, () => this.store.settle(jobId, null))
        : await this.persist('failing a pipeline job', { jobId }, () =>
            this.store.settle(jobId, { message: failure instanceof Error ? failure.message : String(failure) }),
          );
    if (settled && failure === null) this.logger.info({ jobId, kind: data.kind, ms: Date.now() - started }, 'pipeline job finished');
    // Only once the job is settled: a run record without a settled job is what recovery looks for.
    if (settled) await this.persist('finishing a pipeline run', { jobId }, () => this.store.finishRun(jobId));
    for (const listener of this.afterJobListeners) {
      await listener(data, failure === null).catch((err) => this.logger.error({ err, jobId, kind: data.kind }, 'after-job work failed'));
    }
    // Finishing a job may unblock the application's next one.
    this.poke();
  }

  /**
   * Runs a bookkeeping write until it succeeds, logging each failure and waiting longer
   * each time (retryBaseMs, doubling, at most 5 s). Gives up only when this process stops
   * (false): the next start's recovery then settles what was left.
   */
  private async persist(what: string, context: object, write: () => Promise<unknown>): Promise<boolean> {
    let delay = this.options.retryBaseMs ?? 200;
    for (let attempt = 1; ; attempt++) {
      try {
        await write();
        if (attempt > 1) this.logger.warn({ ...context, attempt }, `${what} succeeded after a retry`);
        return true;
      } catch (err) {
        if (this.stopping) {
          this.logger.error({ err, ...context, attempt }, `${what} failed while stopping; recovery will settle it`);
          return false;
        }
        this.logger.error({ err, ...context, attempt, retryInMs: delay }, `${what} failed; retrying`);
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, MAX_RETRY_DELAY_MS);
      }
    }
  }
}
