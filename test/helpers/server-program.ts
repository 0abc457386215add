import { join } from 'node:path';
import { inject } from 'vitest';

/**
 * node's arguments that run a program of this checkout's server as an operator does (`node dist/main.js`):
 * the build the global setup made from src/ for this run (scripts/build-server.mjs). `entry`: one of its programs.
 */
export function serverArgs(entry: 'main' | 'admin' = 'main'): string[] {
  return [join(inject('slipwayServer'), `${entry}.js`)];
}
