// The cron (scheduled jobs) module's public surface: other modules and the composition root import only from here.
export * from '../../platform/cron/schedule.js';
export * from './cron-scheduler.js';
export * from './cron.service.js';
export * from './cron.routes.js';
export { CronRepository } from './cron.repository.js';
export * from './wire.js';
