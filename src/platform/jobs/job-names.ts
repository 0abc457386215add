/**
 * Job kinds queued from more than one module. `reconcile` is run by the deployments module
 * (it matches running instances to the current deployment) and queued by whatever changes
 * what should run (a scale in environments or applications), so its name lives below both.
 */
export const RECONCILE_JOB = 'reconcile';
