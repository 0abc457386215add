import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from './acme-pebble.js';
import { waitFor } from '../helpers/wait.js';

export interface CaddyProcess {
  adminUrl: string;
  /** What Caddy logged (errors are kept for a failing test's message). */
  output(): string;
  stop(): Promise<void>;
}

/**
 * Debian's `caddy` with its admin API on a free loopback port and nothing else (the platform
 * loads every route); its data (certificates, locks) in `dir`.
 */
export async function startCaddy(dir: string): Promise<CaddyProcess> {
  const admin = await freePort();
  const initial = join(dir, 'caddy-initial.json');
  writeFileSync(initial, JSON.stringify({ admin: { listen: `127.0.0.1:${admin}` } }));
  const child: ChildProcess = spawn('/usr/bin/caddy', ['run', '--config', initial], {
    env: { PATH: process.env.PATH ?? '', HOME: dir, XDG_DATA_HOME: dir, XDG_CONFIG_HOME: dir },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let output = '';
  child.stderr!.on('data', (d) => {
    output = (output + d).slice(-1_000_000);
  });
  const adminUrl = `http://127.0.0.1:${admin}`;
  await waitFor(
    'caddy admin API',
    () =>
      fetch(`${adminUrl}/config/`).then(
        (r) => r.ok,
        () => false,
      ),
    15_000,
    100,
  ).catch((err) => {
    child.kill('SIGKILL');
    throw new Error(`${(err as Error).message}\n${output.slice(-2000)}`);
  });
  return {
    adminUrl,
    output: () => output,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 5000).unref();
      }),
  };
}
