export * from './buffered-log.js';
