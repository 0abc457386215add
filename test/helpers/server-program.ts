import { join } from 'node:path';
import { inject } from 'vitest';

/**
 * node's arguments that run a program of this checkout's server as an operator does (`node dist/main.js`):
 * the build the global setup compiled from src/ for this run. `entry` is a path under src/ without `.ts`.
 */
export function serverArgs(entry: 'main' | 'admin/main' = 'main'): string[] {
  return [join(inject('slipwayServer'), `${entry}.js`)];
}
