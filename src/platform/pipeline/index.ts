// What the pipeline's stage modules (images → releases → deployments) share: the lifecycle of a
// build record, its batched log, and which environment is an application's production.
// Infrastructure, so every stage can use it without depending on another stage.
export * from './build-records.js';
export * from './job-names.js';
export * from './environment-trust.js';
export * from './production-environment.js';
export * from './record-log.js';
export * from './row-counts.js';
