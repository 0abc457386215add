// The application logs module's public surface: other modules and the composition root import only from here.
export * from './app-log-writer.js';
export * from './app-logs.service.js';
export * from './app-logs.routes.js';
export * from './cluster-logs.js';
export { AppLogsRepository } from './app-logs.repository.js';
export * from './wire.js';
