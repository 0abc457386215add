// What the stages (build → release → deploy) share: the lifecycle of a build record, its batched
// log, row counts, and (from below the modules) which environment is an application's production,
// an environment's trust and the `reconcile` job name.
export * from './build-records.js';
export * from './record-log.js';
export * from './row-counts.js';
export * from '../../platform/environments/index.js';
export { RECONCILE_JOB } from '../../platform/jobs/job-names.js';
