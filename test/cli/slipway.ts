import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { inject } from 'vitest';

/** The `slipway` executable itself (tests that run it as installed, e.g. on a terminal). */
export const BIN = resolve(import.meta.dirname, '../../bin/slipway.js');
/** The same CLI from src/, bundled once for the run by the global setup: starts without tsx's cost. */
const PROGRAM = inject('slipwayCli');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the `slipway` executable as a user would, with only the environment given (plus PATH). */
export function slipway(args: string[], env: Record<string, string>, options: { cwd?: string; input?: string } = {}): Promise<CliResult> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [PROGRAM, ...args], {
      cwd: options.cwd,
      env: { PATH: process.env.PATH ?? '', ...env },
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
  const child: ChildProcess = spawn(process.execPath, [PROGRAM, ...args], {
    cwd: options.cwd,
    env: { PATH: process.env.PATH ?? '', ...env },
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
