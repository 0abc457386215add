import type { AppContext } from '../context.js';
import { AppError } from '../errors.js';
import type { PipelineJobs } from './pipeline-jobs.js';

/** The pipeline's jobs, for a request that queues one: 503 in a process that runs no pipeline. */
export function requireJobs(ctx: AppContext): PipelineJobs {
  if (!ctx.jobs) throw new AppError('UNAVAILABLE', 'The pipeline is not running in this process');
  return ctx.jobs;
}
