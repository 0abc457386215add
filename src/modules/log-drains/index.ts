// The log-drains module's public surface: drains of an organization or application, and the shipper.
export { LogDrainsRepository } from './log-drains.repository.js';
export { LogDrainShipper } from './shipper.js';
export { syslogFrame, jsonLines, otlpLogs, type DrainLine } from './formats.js';
export * from './wire.js';
