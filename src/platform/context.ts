import type { Config } from '../config.js';
import type { LogWriteFailureLogger } from './logs/index.js';
import type { Db } from './db/database.js';
import type { SecretBox } from './crypto/secret-box.js';
import type { PipelineJobs } from './jobs/pipeline-jobs.js';
import type { ApplicationRuntime, AppUsage } from './runtime/application-runtime.js';

/** What every module's service needs from the platform, built once in main.ts (or a test). */
export interface AppContext {
  config: Config;
  db: Db;
  secrets: SecretBox;
  /** Durable pipeline jobs (absent in processes and tests that run no pipeline). */
  jobs?: PipelineJobs;
  /** Runs deployed releases: local processes and the router, or a cluster (only in processes that run workers). */
  runtime?: ApplicationRuntime;
  /** Told each usage sample the metrics sampler takes (the autoscaler); the composition root adds them. */
  usageListeners?: Array<(usage: AppUsage[], sampledAt: Date) => Promise<unknown>>;
  /** Run once the runtime has started, before the job workers (the composition root adds them: the reconcile of what was deployed). */
  runtimeStartTasks?: Array<() => Promise<unknown>>;
  /** The database's connection string (for the LISTEN connection of live streams); else `config.DATABASE_URL`. */
  databaseUrl?: string;
  /** The platform's logger for work outside a request (set by buildApp from the app's pino logger). */
  logger?: LogWriteFailureLogger & { error(obj: object, msg?: string): void; info(obj: object, msg?: string): void };
}
