export type { InterruptedJob, JobHandler, JobInput, JobKind, JobKindOptions, Jobs, PipelineJobData, RunningJob } from './types.js';
export { PipelineJobs, type PipelineJobsOptions, type JobsLogger } from './pipeline-jobs.js';
export { PIPELINE_QUEUE, type JobPorts, type OrganizationLimits } from './job-store.js';
