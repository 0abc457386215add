export type { InterruptedJob, JobHandler, JobInput, JobKind, JobKindOptions, Jobs, PipelineJobData, RunningJob } from './types.js';
export {
  PipelineJobs,
  type PipelineJobsOptions,
  type JobsLogger,
  type SideQueueHandler,
  type SideQueueOptions,
  type SqlExecutor,
} from './pipeline-jobs.js';
export { PIPELINE_QUEUE, pipelineLimits, queuedCounts, type JobBudget, type JobPorts, type OrganizationLimits } from './job-store.js';
export { RECONCILE_JOB } from './job-names.js';
