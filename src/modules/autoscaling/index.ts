// The autoscaling module's public surface: other modules and the composition root import only from here.
export * from './autoscaler.js';
export * from './autoscaling.service.js';
export * from './autoscaling.routes.js';
export * from './scaling-decision.js';
export { AutoscalingRepository } from './autoscaling.repository.js';
export * from './wire.js';
