// The Ancla adapter's public surface: the composition root imports only from here.
export * from './wire.js';
