export * from './buffered-log.js';
export * from './bounded-lines.js';
export * from './storable-text.js';
export * from './record-log-tap.js';
