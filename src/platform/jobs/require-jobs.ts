import type { AppContext } from '../context.js';
import { AppError } from '../errors.js';
import type { PipelineJobs } from './pipeline-jobs.js';

/** The pipeline's jobs, for a request that queues one: 503 in a process that runs no pipeline. */
export function requireJobs(ctx: AppContext): PipelineJobs {
  if (!ctx.jobs) throw new AppError('UNAVAILABLE', 'The pipeline is not running in this process');
  return ctx.jobs;
}

/**
 * The pipeline's jobs, for a request about to store a record and queue its job: also 429 when
 * the application's organization has its cap of jobs waiting or running (nothing stored then).
 */
export async function requireJobRoom(ctx: AppContext, applicationId: string): Promise<PipelineJobs> {
  const jobs = requireJobs(ctx);
  await jobs.ensureRoom(applicationId);
  return jobs;
}
