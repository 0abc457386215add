/**
 * Job kinds more than one module queues. `reconcile` (run by the deployments module) makes
 * what runs for an application's environment match its current deployment, or stops it all
 * when the environment has none (deleted, stopped).
 */
export const RECONCILE_JOB = 'reconcile';
