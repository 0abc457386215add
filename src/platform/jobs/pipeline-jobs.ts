import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { sql } from 'kysely';
import PgBoss from 'pg-boss';
import type { Db } from '../db/database.js';
import { deadWorkers } from './dead-workers.js';
import { JobStore, PIPELINE_QUEUE } from './job-store.js';
import { killOrphansOf, setWorkerMark } from './orphan-processes.js';
import type { JobHandler, JobInput, JobKind, JobKindOptions, Jobs, PipelineJobData } from './types.js';
import { Wakeup } from './wakeup.js';

export interface JobsLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface PipelineJobsOptions {
  databaseUrl: string;
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
  /** How long stop() waits for running jobs after aborting them. */
  stopTimeoutMs?: number;
  logger?: JobsLogger;
}

/** Longer than any build or deploy may take; our own recovery settles jobs of dead workers sooner. */
const JOB_EXPIRE_SECONDS = 6 * 60 * 60;

const silent: JobsLogger = { info() {}, warn() {}, error() {} };

interface Registration {
  handler: JobHandler;
  options: JobKindOptions;
}

/**
 * pg-boss 10 as the durable store of pipeline jobs, with our own worker loop (see
 * JobStore.fetchNext for why), a heartbeat per worker process, and recovery of the jobs
 * of dead workers: their records are settled by the kind's `onInterrupted` and their
 * jobs failed (or put back), so nothing stays in progress forever or blocks a queue.
 */
export class PipelineJobs implements Jobs {
  private boss: PgBoss | null = null;
  private readonly store: JobStore;
  private readonly kinds = new Map<string, Registration>();
  private logger: JobsLogger;
  private id: string | null = null;
  private abort = new AbortController();
  private loops: Promise<void>[] = [];
  private readonly wakeup = new Wakeup();
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private stopping = false;
  private sweepers: Array<() => Promise<void>> = [];
  private lastSweep = 0;
  private ticking = false;

  constructor(private readonly options: PipelineJobsOptions) {
    this.store = new JobStore(options.db);
    this.logger = options.logger ?? silent;
  }

  get workerId() {
    return this.id;
  }

  setLogger(logger: JobsLogger) {
    this.logger = logger;
  }

  /** Opens the job store (creating pg-boss's schema and the queue when missing). Enough to enqueue. */
  async start(): Promise<void> {
    if (this.boss) return;
    const boss = new PgBoss({
      connectionString: this.options.databaseUrl,
      max: 3,
      schedule: false,
      application_name: 'slipway-jobs',
    });
    boss.on('error', (err) => this.logger.error({ err }, 'job store error'));
    await boss.start();
    // pg-boss's createQueue deadlocks when processes starting together on a new database
    // create the queue at once: one at a time, under a lock held until this transaction ends.
    await this.options.db.transaction().execute(async (trx) => {
      await sql`SELECT pg_advisory_xact_lock(hashtext('slipway.pipeline-queue'))`.execute(trx);
      if (!(await boss.getQueue(PIPELINE_QUEUE))) {
        await boss.createQueue(PIPELINE_QUEUE, { name: PIPELINE_QUEUE, policy: 'singleton', retryLimit: 0, expireInSeconds: JOB_EXPIRE_SECONDS });
      }
    });
    this.boss = boss;
  }

  register(kind: JobKind, handler: JobHandler, options: JobKindOptions = {}): void {
    this.kinds.set(kind, { handler, options });
    this.poke();
  }

  /**
   * Adds periodic maintenance run by this process's workers (at start, then about every
   * `sweepIntervalMs`): e.g. settling records whose job is gone, so none stays in progress.
   */
  addSweeper(sweep: () => Promise<void>): void {
    this.sweepers.push(sweep);
  }

  /** Ids of the pipeline jobs still waiting or running (records whose job is not among them are abandoned). */
  liveJobIds(): Promise<Set<string>> {
    return this.store.liveJobIds();
  }

  async enqueue(kind: JobKind, data: JobInput): Promise<string> {
    if (!this.boss) throw new Error('The job store is not started');
    const id = await this.boss.send(PIPELINE_QUEUE, { ...data, kind }, { singletonKey: data.applicationId });
    if (!id) throw new Error('The job store refused the job');
    this.poke();
    return id;
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
    this.logger.info({ workerId: this.id, concurrency }, 'pipeline workers started');
  }

  /** Stops the workers (running jobs see their signal aborted), then the job store. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.abort.abort();
    this.poke();
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    this.heartbeatTimer = null;
    const timeout = this.options.stopTimeoutMs ?? 10_000;
    await Promise.race([Promise.allSettled(this.loops), new Promise((r) => setTimeout(r, timeout).unref())]);
    this.loops = [];
    if (this.id) {
      // Jobs still running past the timeout are settled by the next start's recovery.
      await this.store.markStopped(this.id).catch(() => {});
      this.id = null;
    }
    const boss = this.boss;
    this.boss = null;
    await boss?.stop({ graceful: false, wait: true, timeout: 1000 }).catch(() => {});
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
    if (!this.id || this.stopping || this.ticking) return;
    this.ticking = true;
    try {
      await this.store.heartbeat(this.id, hostname(), process.pid);
      await this.recover();
      if (Date.now() - this.lastSweep >= (this.options.sweepIntervalMs ?? 60_000)) await this.sweep();
    } catch (err) {
      this.logger.error({ err }, 'worker heartbeat failed');
    } finally {
      this.ticking = false;
    }
  }

  private async sweep() {
    this.lastSweep = Date.now();
    for (const sweep of this.sweepers) {
      try {
        await sweep();
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
    while (!this.stopping) {
      let job;
      try {
        job = await this.store.fetchNext(this.id!, [...this.kinds.keys()]);
      } catch (err) {
        if (this.stopping) break;
        this.logger.error({ err }, 'fetching a pipeline job failed');
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
    try {
      await registration.handler(data, { jobId, workerId: this.id!, signal: this.abort.signal });
      await this.boss!.complete(PIPELINE_QUEUE, jobId);
      this.logger.info({ jobId, kind: data.kind, ms: Date.now() - started }, 'pipeline job finished');
    } catch (err) {
      this.logger.error({ err, jobId, kind: data.kind }, 'pipeline job failed');
      await this.boss?.fail(PIPELINE_QUEUE, jobId, { message: err instanceof Error ? err.message : String(err) }).catch(() => {});
    }
    await this.store.finishRun(jobId).catch(() => {});
    // Finishing a job may unblock the application's next one.
    this.poke();
  }
}
