import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { waitFor } from '../helpers/wait.js';

export interface CaddyProcess {
  /** `unix//<dir>/caddy-admin/admin.sock`: the setup docs/operations.md documents (a socket in a 0700 directory). */
  adminUrl: string;
  /** One request to the admin API over its socket (the test's own look at what the platform loaded). */
  admin(path: string): Promise<{ status: number; text: string }>;
  /** What Caddy logged (errors are kept for a failing test's message). */
  output(): string;
  stop(): Promise<void>;
}

/**
 * Debian's `caddy` with its admin API on a unix socket in a 0700 directory (or `socketDirMode`) and nothing else
 * (the platform loads every route); its data (certificates, locks) in `dir`.
 */
export async function startCaddy(dir: string, options: { socketDirMode?: number } = {}): Promise<CaddyProcess> {
  const socketDir = join(dir, 'caddy-admin');
  mkdirSync(socketDir, { recursive: true, mode: 0o700 });
  chmodSync(socketDir, options.socketDirMode ?? 0o700);
  const socketPath = join(socketDir, 'admin.sock');
  const adminUrl = `unix/${socketPath}`;
  const initial = join(dir, 'caddy-initial.json');
  writeFileSync(initial, JSON.stringify({ admin: { listen: adminUrl, origins: ['localhost'] } }));
  const child: ChildProcess = spawn('/usr/bin/caddy', ['run', '--config', initial], {
    env: { PATH: process.env.PATH ?? '', HOME: dir, XDG_DATA_HOME: dir, XDG_CONFIG_HOME: dir },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let output = '';
  child.stderr!.on('data', (d) => {
    output = (output + d).slice(-1_000_000);
  });
  const dispatcher = new Agent({ pipelining: 0, connect: { socketPath } });
  const admin = async (path: string) => {
    const res = await request(`http://localhost${path}`, { dispatcher });
    return { status: res.statusCode, text: await res.body.text() };
  };
  await waitFor(
    'caddy admin API',
    () =>
      admin('/config/').then(
        (r) => r.status === 200,
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
    admin,
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
