import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, renameSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { programFiles } from '../../../program-files.js';
import { FrameReader, FRAME, PLATFORM_SAYS, RELEASING_SHIM_PROTOCOL, type ShimHello, type ShimSettings } from './shim-protocol.js';

/** The shim's program (`.ts` under tsx in development and tests, `.js` once built). */
const SHIM_PROGRAM = programFiles.instanceShim;

/** Longest unix socket path (sun_path) Linux takes. */
const MAX_SOCKET_PATH = 107;

/** The variable that marks a shim (and its instance) as the instance's, so a leftover is recognized safely. */
export const INSTANCE_ID_VARIABLE = 'SLIPWAY_INSTANCE_ID';

export function shimSocketPath(dir: string, instanceId: string): string {
  const path = join(dir, `${instanceId}.sock`);
  if (path.length > MAX_SOCKET_PATH) throw new Error(`the instance socket path ${path} is too long; use a shorter DATA_DIR`);
  return path;
}

/**
 * Starts the shim of one instance, detached (its own session: it outlives this process).
 * `controlPipes` extra pipes on fds 3.. reach the sandbox through it (see controlSandbox).
 */
export function launchShim(settings: ShimSettings, controlPipes: number): ChildProcess {
  const program = SHIM_PROGRAM.endsWith('.ts') ? sourceShimProgram(dirname(settings.socket)) : SHIM_PROGRAM;
  const shim = spawn(process.execPath, [program], {
    // Only what node needs: the instance's environment goes in on stdin.
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', [INSTANCE_ID_VARIABLE]: settings.id },
    detached: true,
    stdio: ['pipe', 'ignore', 'ignore', ...Array<'pipe'>(controlPipes).fill('pipe')],
  });
  shim.stdin!.on('error', () => {});
  shim.stdin!.end(JSON.stringify(settings));
  // This process may end before the shim (that is the point): nothing here waits for it.
  shim.unref();
  return shim;
}

export interface ShimEvents {
  output(stream: 'stdout' | 'stderr', chunk: Buffer): void;
  dropped(counts: { lines: number; bytes: number }): void;
  /** The instance ended (code/signal), or the shim is gone without saying (`lost`). */
  exit(code: number | null, signal: NodeJS.Signals | null, lost: boolean): void;
}

/**
 * A connection to a shim: its hello; `accept` (it is the process on record: send its output
 * here); `release` (this process is going, the instance keeps running: output up to the shim's
 * answer is still delivered, what follows waits for the next platform process); `detach` (stop
 * following at once; what the shim writes meanwhile is lost).
 */
export interface ShimConnection {
  hello: ShimHello;
  accept(): void;
  release(): Promise<void>;
  detach(): void;
}

/** How long a release waits for the shim's answer (it only has to flush what it wrote). */
const RELEASE_MS = 5000;

const sourceShims = new Map<string, string>();

/**
 * Run from source (development, tests, benches), the shim is bundled once per platform process
 * into one plain JavaScript file in the shims' directory (0700, the platform's own), so each
 * instance starts under plain node as a built platform's does: `node --import tsx` costs 0.4–1 s
 * per instance start (esbuild's service), which was most of a configuration release's time.
 */
function sourceShimProgram(shimDir: string): string {
  const cached = sourceShims.get(shimDir);
  if (cached) return cached;
  // tsx's own esbuild: present whenever the source runs at all.
  const esbuild = createRequire(import.meta.url)('esbuild') as typeof import('esbuild');
  const bundled = esbuild.buildSync({
    entryPoints: [SHIM_PROGRAM],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    write: false,
  });
  const program = join(shimDir, 'instance-shim.source.mjs');
  // Renamed into place: a shim starting meanwhile reads the old file whole or the new one whole.
  const staging = `${program}.${process.pid}`;
  writeFileSync(staging, bundled.outputFiles[0]!.contents, { mode: 0o600 });
  renameSync(staging, program);
  sourceShims.set(shimDir, program);
  return program;
}

/**
 * Connects to the shim's socket (retried until `deadline`: a shim just launched may not listen
 * yet) and follows it. Resolves with the hello; `events` receive everything after it.
 */
export async function connectShim(
  path: string,
  events: ShimEvents,
  deadline: number,
  gone: () => boolean = () => false,
): Promise<ShimConnection> {
  for (;;) {
    try {
      return await connectOnce(path, events);
    } catch (err) {
      if (gone()) throw new Error('its supervisor ended before it started');
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

function connectOnce(path: string, events: ShimEvents): Promise<ShimConnection> {
  return new Promise((resolve, reject) => {
    const socket = connect(path);
    let hello: ShimHello | null = null;
    let ended = false;
    let detached = false;
    const end = (code: number | null, signal: NodeJS.Signals | null, lost: boolean) => {
      if (ended || detached) return;
      ended = true;
      events.exit(code, signal, lost);
    };
    const reader = new FrameReader((type, payload) => {
      if (type === FRAME.hello) {
        const said = (hello = JSON.parse(payload.toString('utf8')) as ShimHello);
        const detach = () => {
          detached = true;
          socket.destroy();
        };
        resolve({
          hello: said,
          // Never after a release: the shim would take a connection it has ended.
          accept: () => {
            if (!detached) socket.write(Buffer.from([PLATFORM_SAYS.accept]));
          },
          release: () => {
            if (said.protocol < RELEASING_SHIM_PROTOCOL || socket.destroyed) return Promise.resolve(detach());
            // Its exit, if it comes meanwhile, is the next process's to handle: not reported here.
            detached = true;
            return new Promise<void>((resolve) => {
              const timer = setTimeout(detach, RELEASE_MS);
              socket.once('close', () => {
                clearTimeout(timer);
                resolve();
              });
              socket.write(Buffer.from([PLATFORM_SAYS.release]));
            });
          },
          detach,
        });
      } else if (type === FRAME.stdout) events.output('stdout', payload);
      else if (type === FRAME.stderr) events.output('stderr', payload);
      else if (type === FRAME.dropped) events.dropped(JSON.parse(payload.toString('utf8')) as { lines: number; bytes: number });
      else if (type === FRAME.exit) {
        const { code, signal } = JSON.parse(payload.toString('utf8')) as { code: number | null; signal: NodeJS.Signals | null };
        end(code, signal, false);
      }
    });
    socket.on('data', (chunk: Buffer) => {
      try {
        reader.write(chunk);
      } catch {
        socket.destroy();
      }
    });
    socket.on('error', (err) => {
      if (!hello) reject(err);
    });
    socket.on('close', () => {
      if (!hello) reject(new Error('the instance shim closed before saying hello'));
      else end(null, null, true);
    });
  });
}

/** The start time of a process (field 22 of /proc/<pid>/stat), or null when it is gone. */
export async function processStartTicks(pid: number): Promise<string | null> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
  return stat ? (stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null) : null;
}

/** Whether a shim still listens for this instance (its socket file exists). */
export function shimListening(path: string): boolean {
  return existsSync(path);
}
