// The alerts module's public surface: alert rules over the platform's measures, judged by the `alerts` job.
export { AlertsRepository } from './alerts.repository.js';
export { AlertEvaluator, ALERTS_QUEUE } from './alert-evaluator.js';
export * from './wire.js';
