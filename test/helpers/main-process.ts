import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { serverArgs } from './server-program.js';

const ROOT = resolve(import.meta.dirname, '../..');
const running = new Set<ChildProcess>();

/** The environment a test gives the real processes: nothing of the test runner's own leaks in; a '' value unsets a default below. */
function baseEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const merged = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env };
  return Object.fromEntries(Object.entries(merged).filter(([, value]) => value !== ''));
}

/** The real server (`node main.js` of the run's build) as an operator starts it; `ready` is its API URL (null if it exited first). */
export function runMain(env: Record<string, string>) {
  const child = spawn(process.execPath, serverArgs(), {
    cwd: ROOT,
    // No stability window: a deployment completes once healthy (tests that need one set it).
    env: baseEnv({
      HOST: '127.0.0.1',
      PORT: '0',
      ROUTER_HOST: '127.0.0.1',
      // The built-in edge unless a test names another, or unsets it with '' to get the default (HAProxy where installed).
      EDGE_DRIVER: 'builtin',
      LOG_LEVEL: 'info',
      DEPLOY_STABILITY_WINDOW_SECONDS: '0',
      ...env,
    }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((done) =>
    child.on('exit', (code) => {
      running.delete(child);
      done(code);
    }),
  );
  const ready = new Promise<string | null>((ok) => {
    const check = () => {
      const m = /API listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (m) ok(m[1]!);
    };
    child.stdout!.on('data', check);
    child.stderr!.on('data', check);
    void exited.then(() => ok(null));
  });
  const stop = async () => {
    if (child.exitCode !== null) return child.exitCode;
    child.kill('SIGTERM');
    return exited;
  };
  return { ready, exited, stop, output: () => output };
}

/** `npm run admin -- args` as a child process: its exit code and output. */
export function runCli(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [...serverArgs('admin'), ...args], {
      cwd: ROOT,
      env: baseEnv(env),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    running.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (code) => {
      running.delete(child);
      done({ code, stdout, stderr });
    });
  });
}

/** Kills whatever a test file left running (afterAll). */
export function killLeftovers() {
  for (const child of running) child.kill('SIGKILL');
}
