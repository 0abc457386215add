import type { Config } from '../config.js';
import type { LogWriteFailureLogger } from './logs/index.js';
import type { Db } from './db/database.js';
import type { SecretBox } from './crypto/secret-box.js';
import type { PipelineJobs } from './jobs/pipeline-jobs.js';
import type { ApplicationRuntime } from './runtime/application-runtime.js';

/** What every module's service needs from the platform, built once in main.ts (or a test). */
export interface AppContext {
  config: Config;
  db: Db;
  secrets: SecretBox;
  /** Durable pipeline jobs (absent in processes and tests that run no pipeline). */
  jobs?: PipelineJobs;
  /** Runs deployed releases: local processes and the router, or a cluster (only in processes that run workers). */
  runtime?: ApplicationRuntime;
  /** The database's connection string (for the LISTEN connection of live streams); else `config.DATABASE_URL`. */
  databaseUrl?: string;
  /** The platform's logger for work outside a request (else the composition root gives its services a child of the process's logger). */
  logger?: LogWriteFailureLogger & { error(obj: object, msg?: string): void; info(obj: object, msg?: string): void };
}
