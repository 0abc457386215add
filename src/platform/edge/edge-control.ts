import { chmodSync, rmSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { StartupError } from '../startup-error.js';

/** The edge process's control socket, pid file and log files, all in DATA_DIR/edge. */
export const CONTROL_SOCKET = 'control.sock';
export const PID_FILE = 'edge.pid';
export const LOG_FILE = 'edge.log';
/** The spawned edge's standard error: only its start-up and fatal lines (rewritten at each spawn). */
export const START_LOG_FILE = 'edge-start.log';

/** Longest unix socket path the kernel takes (sockaddr_un.sun_path, 108 bytes with its NUL). */
const MAX_SOCKET_PATH = 107;
/** A request or an answer is one short JSON line; anything longer is not ours. */
const MAX_LINE_BYTES = 4096;

/** What a running edge says about itself. */
export interface EdgeStatus {
  pid: number;
  driver: 'builtin' | 'caddy' | 'nginx' | 'haproxy';
  port: number;
  httpsPort: number | null;
}

export type EdgeCommand = 'status' | 'stop';

export function controlSocketPath(edgeDir: string): string {
  const path = join(edgeDir, CONTROL_SOCKET);
  if (Buffer.byteLength(path) > MAX_SOCKET_PATH)
    throw new StartupError(`The edge's control socket ${path} is longer than a unix socket path may be: use a shorter DATA_DIR`);
  return path;
}

/**
 * Asks the edge listening on `socketPath`; rejects when none answers (no socket, nobody
 * listening, or no well-formed answer within `timeoutMs`): that edge is not alive.
 */
export function askEdge(socketPath: string, command: EdgeCommand, timeoutMs = 2000): Promise<EdgeStatus> {
  return new Promise((resolve, reject) => {
    const socket = connect(socketPath);
    let answer = '';
    const fail = (err: Error) => {
      socket.destroy();
      reject(err);
    };
    socket.setTimeout(timeoutMs, () => fail(new Error('the edge did not answer')));
    socket.on('error', fail);
    socket.on('connect', () => socket.write(JSON.stringify({ command }) + '\n'));
    socket.on('data', (chunk) => {
      answer += chunk.toString('utf8');
      if (answer.length > MAX_LINE_BYTES) return fail(new Error('the edge answered too much'));
      const end = answer.indexOf('\n');
      if (end < 0) return;
      socket.end();
      try {
        const status = JSON.parse(answer.slice(0, end)) as EdgeStatus;
        if (!Number.isInteger(status.pid) || !Number.isInteger(status.port)) throw new Error('malformed');
        resolve(status);
      } catch {
        reject(new Error('the edge answered something else'));
      }
    });
    socket.on('end', () => reject(new Error('the edge closed the connection')));
  });
}

/**
 * The edge's side: answers `status` with `status()` and `stop` likewise, then calls `onStop`.
 * The socket is 0600 in the platform's own directory: only the platform's user reaches it.
 */
export async function serveControl(socketPath: string, status: () => EdgeStatus, onStop: () => void): Promise<Server> {
  rmSync(socketPath, { force: true });
  const server = createServer((socket) => {
    let request = '';
    socket.setTimeout(5000, () => socket.destroy());
    socket.on('error', () => socket.destroy());
    socket.on('data', (chunk) => {
      request += chunk.toString('utf8');
      if (request.length > MAX_LINE_BYTES) return socket.destroy();
      const end = request.indexOf('\n');
      if (end < 0) return;
      let command: unknown;
      try {
        command = (JSON.parse(request.slice(0, end)) as { command?: unknown }).command;
      } catch {
        return socket.destroy();
      }
      if (command !== 'status' && command !== 'stop') return socket.destroy();
      socket.end(JSON.stringify(status()) + '\n');
      if (command === 'stop') onStop();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve());
  });
  chmodSync(socketPath, 0o600);
  return server;
}
