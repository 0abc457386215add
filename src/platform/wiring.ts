import type { App } from './http/types.js';

/** The process's logger (pino): the worker's own, and the HTTP app's `app.log` is one too. */
export interface PlatformLogger {
  level: string;
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  child(bindings: Record<string, unknown>): PlatformLogger;
}

/**
 * A module's routes, registered under /v1 by the HTTP app (src/app.ts). Building one is only a
 * closure over the module's services: a worker process, which serves no HTTP, never calls it.
 */
export type Routes = (v1: App) => Promise<void>;

/** Periodic maintenance the job workers run once started (see `PipelineJobs.addSweeper`). */
export interface Sweeper {
  sweep: () => Promise<unknown>;
  /** At most this often (default: every sweep interval of the job workers). */
  everyMs?: number;
}

/** What every module's `wire()` returns: its services (by name), its routes and its sweepers. */
export interface Wired {
  [service: string]: unknown;
  routes: Routes[];
  /** Handed to the job workers by `start()` (src/lifecycle.ts). */
  sweepers?: Sweeper[];
}
