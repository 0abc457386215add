import type { WebSocket } from 'ws';
import type { ExecProcess } from '../../platform/runtime/index.js';

/**
 * The exec WebSocket's messages. Server to client, binary: one type byte (1 stdout, 2 stderr)
 * and the bytes; text: `{"type":"exit","exit_code":n,"signal":s}`, the last message. Client to
 * server, binary: type 0 and standard input bytes, type 4 alone: the input's end; text:
 * `{"type":"resize","rows":r,"cols":c}`.
 */
export const EXEC_FRAME = { stdin: 0, stdout: 1, stderr: 2, stdinEnd: 4 } as const;

/** Largest message a client may send (a paste is cut into several). */
export const EXEC_MAX_MESSAGE = 64 * 1024;
/** Output waiting for a slow client past which the command's output is paused. */
const HIGH_WATER = 1024 * 1024;

/** Joins the WebSocket and the process both ways, bounded in both directions; resolves with the exit status once both ended. */
export function pipeExec(ws: WebSocket, process: ExecProcess): Promise<{ exitCode: number | null; signal: string | null }> {
  let queued = 0;
  const outputs = [process.stdout, process.stderr] as Array<NodeJS.ReadableStream & { pause(): void; resume(): void }>;
  const forward = (type: number) => (chunk: Buffer) => {
    if (ws.readyState !== 1) return;
    queued += chunk.length;
    ws.send(Buffer.concat([Buffer.from([type]), chunk]), { binary: true }, () => {
      queued -= chunk.length;
      if (queued < HIGH_WATER / 4) for (const o of outputs) o.resume();
    });
    if (queued > HIGH_WATER) for (const o of outputs) o.pause();
  };
  process.stdout.on('data', forward(EXEC_FRAME.stdout));
  process.stderr.on('data', forward(EXEC_FRAME.stderr));
  const stdin = process.stdin as NodeJS.WritableStream & { once(e: 'drain', f: () => void): void };
  ws.on('message', (data, isBinary) => {
    const bytes = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
    if (!isBinary) {
      try {
        const message = JSON.parse(bytes.toString('utf8')) as { type?: string; rows?: unknown; cols?: unknown };
        if (message.type === 'resize' && typeof message.rows === 'number' && typeof message.cols === 'number')
          process.resize({ rows: message.rows, cols: message.cols });
      } catch {
        /* not a control message: ignored */
      }
      return;
    }
    if (bytes[0] === EXEC_FRAME.stdinEnd) {
      stdin.end();
      // Nothing more goes in: an ending stream emits no 'drain', so a pause waiting for one would
      // leave the socket unread (its close unanswered) until the close timeout.
      ws.resume();
    } else if (bytes[0] === EXEC_FRAME.stdin && bytes.length > 1 && !stdin.write(bytes.subarray(1))) {
      // The command reads slower than the client types or pastes: the socket waits for it.
      ws.pause();
      stdin.once('drain', () => ws.resume());
    }
  });
  ws.on('error', () => {});
  ws.on('close', () => process.kill());
  const ended = (stream: NodeJS.ReadableStream) => new Promise<void>((resolve) => stream.once('end', resolve).once('close', resolve));
  return Promise.all([process.exited, ended(process.stdout), ended(process.stderr)]).then(([status]) => {
    if (ws.readyState === 1) {
      ws.send(JSON.stringify({ type: 'exit', exit_code: status.exitCode, signal: status.signal }));
      ws.close(1000);
    }
    return status;
  });
}
