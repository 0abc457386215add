/**
 * Durable pipeline jobs: the shapes every module codes against.
 *
 * One queue (`pipeline_jobs`, see JobStore): an application never runs two pipeline jobs
 * at once, later ones wait in order, and different applications run side by side.
 */
import type { Db } from '../db/database.js';

export type JobKind = 'build' | 'release' | 'deploy' | 'chain' | (string & {});

/** What a caller passes to enqueue; the job's data is this plus its kind. */
export interface JobInput {
  applicationId: string;
  environmentId?: string;
  /** The record (image, release, deployment) the job works on. */
  recordId?: string;
  /** Filled in at enqueue (JobPorts.budgetOf): the organization whose caps the job counts against. */
  organizationId?: string | null;
  /** Filled in at enqueue: the user who created that organization, whose caps all their organizations share. */
  ownerId?: string | null;
  [key: string]: unknown;
}

export interface PipelineJobData extends JobInput {
  kind: JobKind;
}

export interface RunningJob {
  jobId: string;
  workerId: string;
  /** Aborted when the worker stops: handlers stop their child processes and return. */
  signal: AbortSignal;
}

export type JobHandler = (data: PipelineJobData, job: RunningJob) => Promise<void>;

export interface InterruptedJob {
  jobId: string;
  /** The worker that was running it and is now known to be dead. */
  workerId: string | null;
}

export interface JobKindOptions {
  /**
   * Called when the worker running a job of this kind died (crash, kill, restart) before
   * finishing it. Settle the record (e.g. error "interrupted by a restart") and return
   * nothing to fail the job, or return 'retry' to run it again from the start (it keeps
   * its place at the head of the application's queue).
   */
  onInterrupted?: (data: PipelineJobData, job: InterruptedJob) => Promise<'retry' | void>;
}

export interface Jobs {
  /** Registers the handler of a kind; workers only take jobs of registered kinds. */
  register(kind: JobKind, handler: JobHandler, options?: JobKindOptions): void;
  /**
   * Queues a job behind the application's earlier jobs; returns the job id. With `transaction`
   * (a Kysely transaction), the job is written in it and exists only if it commits.
   */
  enqueue(kind: JobKind, data: JobInput, transaction?: Db): Promise<string>;
  /** This process's worker id while its workers run, else null. */
  readonly workerId: string | null;
}

/** What a module needs to keep its records from staying in progress forever. */
export interface JobMaintenance {
  addSweeper(sweep: () => Promise<unknown>, options?: { everyMs?: number }): void;
  liveJobIds(): Promise<Set<string>>;
}
