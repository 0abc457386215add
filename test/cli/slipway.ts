import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';

export const BIN = resolve(import.meta.dirname, '../../bin/slipway.js');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the `slipway` executable as a user would, with only the environment given (plus PATH). */
export function slipway(args: string[], env: Record<string, string>, options: { cwd?: string; input?: string } = {}): Promise<CliResult> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: options.cwd,
      env: { PATH: process.env.PATH ?? '', SLIPWAY_CLI_SOURCE: '1', ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => {
      stdout += c;
    });
    child.stderr.on('data', (c) => {
      stderr += c;
    });
    child.on('error', fail);
    child.on('close', (code, signal) => done({ code: code ?? (signal ? 128 : 1), stdout, stderr }));
    child.stdin.end(options.input ?? '');
  });
}

/** A long-running `slipway` (logs --follow): its output so far, a wait for a text, and a stop. */
export function slipwayLive(args: string[], env: Record<string, string>, options: { cwd?: string } = {}) {
  const child: ChildProcess = spawn(process.execPath, [BIN, ...args], {
    cwd: options.cwd,
    env: { PATH: process.env.PATH ?? '', SLIPWAY_CLI_SOURCE: '1', ...env },
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c) => {
    stdout += c;
  });
  child.stderr!.on('data', (c) => {
    stderr += c;
  });
  const exited = new Promise<number>((r) => child.on('close', (code, signal) => r(code ?? (signal ? 128 : 1))));
  return {
    output: () => ({ stdout, stderr }),
    async waitFor(text: string, timeoutMs = 60_000) {
      const end = Date.now() + timeoutMs;
      while (!stdout.includes(text)) {
        if (Date.now() > end || child.exitCode !== null)
          throw new Error(`slipway ${args.join(' ')} never printed '${text}'; stdout: ${stdout}\nstderr: ${stderr}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async stop() {
      child.kill('SIGINT');
      return exited;
    },
  };
}
