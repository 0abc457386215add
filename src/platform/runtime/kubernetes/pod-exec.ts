/**
 * A command in a pod's container through the `exec` subresource (`slipway exec` on Kubernetes):
 * a WebSocket speaking the channel protocol, v5.channel.k8s.io (which can close standard input)
 * or v4.channel.k8s.io. Each binary message starts with its channel: 0 stdin, 1 stdout, 2 stderr,
 * 3 the exit status (a `Status` object), 4 a terminal's size (`{"Width","Height"}`), and in v5
 * 255 closing a channel. client-node's Exec ends the process' own stdout on some frames and keeps
 * no bound: this is its own small client.
 */
import { PassThrough, Writable } from 'node:stream';
import type { KubeConfig } from '@kubernetes/client-node';
import { WebSocket, type ClientOptions } from 'ws';
import type { ExecProcess, ExecRequest } from '../port.js';

const PROTOCOLS = ['v5.channel.k8s.io', 'v4.channel.k8s.io'];
const CHANNEL = { stdin: 0, stdout: 1, stderr: 2, error: 3, resize: 4, close: 255 } as const;
/** Largest message taken from the API server (output arrives in chunks far smaller). */
const MAX_MESSAGE = 1024 * 1024;
const CONNECT_TIMEOUT_MS = 15_000;

export interface PodExecTarget {
  namespace: string;
  pod: string;
  container: string;
}

/** The exit code a v4/v5 status message carries: 0 on Success, the `ExitCode` cause of a NonZeroExitCode, else null. */
export function exitCodeOf(status: {
  status?: string;
  reason?: string;
  details?: { causes?: Array<{ reason?: string; message?: string }> };
}) {
  if (status.status === 'Success') return 0;
  const cause = status.details?.causes?.find((c) => c.reason === 'ExitCode');
  const code = Number(cause?.message);
  return status.reason === 'NonZeroExitCode' && Number.isInteger(code) ? code : null;
}

/** Opens the exec WebSocket; resolves once the API server accepted it (the command then runs). */
export async function execInPod(kubeConfig: KubeConfig, target: PodExecTarget, request: ExecRequest): Promise<ExecProcess> {
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) throw new Error('no cluster in the kubeconfig');
  const tty = Boolean(request.tty);
  const command = request.command === null ? ['/bin/sh'] : ['/bin/sh', '-c', request.command];
  const query = new URLSearchParams();
  for (const word of command) query.append('command', word);
  query.set('container', target.container);
  query.set('stdin', 'true');
  query.set('stdout', 'true');
  // With a terminal the output is one stream (what the terminal shows), as kubectl asks.
  query.set('stderr', String(!tty));
  query.set('tty', String(tty));
  const base = cluster.server.replace(/^http/, 'ws').replace(/\/+$/, '');
  const url = `${base}/api/v1/namespaces/${encodeURIComponent(target.namespace)}/pods/${encodeURIComponent(target.pod)}/exec?${query}`;
  // The kubeconfig's credentials (token, client certificate) and trust (its CA) for the handshake.
  const options: ClientOptions = {};
  await kubeConfig.applyToHTTPSOptions(options as never);

  const ws = new WebSocket(url, PROTOCOLS, { ...options, maxPayload: MAX_MESSAGE, handshakeTimeout: CONNECT_TIMEOUT_MS });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => {
      ws.terminate();
      reject(new Error(`the Kubernetes API server refused exec (HTTP ${res.statusCode} ${res.statusMessage ?? ''})`.trim()));
    });
  });
  const canClose = ws.protocol === 'v5.channel.k8s.io';

  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let exitCode: number | null = null;
  let sawStatus = false;
  const send = (channel: number, bytes: Buffer, done?: (err?: Error) => void) => {
    if (ws.readyState !== WebSocket.OPEN) return done?.();
    ws.send(Buffer.concat([Buffer.from([channel]), bytes]), { binary: true }, done);
  };

  // The API server's output waits in these streams; past their mark the socket stops reading.
  const deliver = (stream: PassThrough, bytes: Buffer) => {
    if (!stream.write(bytes)) {
      ws.pause();
      stream.once('drain', () => ws.resume());
    }
  };
  ws.on('message', (message, isBinary) => {
    const data = Buffer.isBuffer(message) ? message : Array.isArray(message) ? Buffer.concat(message) : Buffer.from(message);
    if (!isBinary || data.length === 0) return;
    const payload = data.subarray(1);
    switch (data[0]) {
      case CHANNEL.stdout:
        return deliver(stdout, payload);
      case CHANNEL.stderr:
        return deliver(stderr, payload);
      case CHANNEL.error:
        sawStatus = true;
        try {
          exitCode = exitCodeOf(JSON.parse(payload.toString('utf8')));
        } catch {
          exitCode = null;
        }
        return;
      case CHANNEL.close:
        if (payload[0] === CHANNEL.stdout) stdout.end();
        if (payload[0] === CHANNEL.stderr) stderr.end();
        return;
    }
  });
  ws.on('error', () => {});
  const exited = new Promise<{ exitCode: number | null; signal: string | null }>((resolve) =>
    ws.once('close', () => {
      stdout.end();
      stderr.end();
      // Closed without a status: the connection was lost or killed, not the command's own end.
      resolve({ exitCode: sawStatus ? exitCode : null, signal: sawStatus ? null : 'SIGHUP' });
    }),
  );

  const stdin = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      send(CHANNEL.stdin, chunk, callback);
    },
    final(callback) {
      // v4 has no way to end the input but closing the whole exec; v5 closes channel 0.
      if (canClose) send(CHANNEL.close, Buffer.from([CHANNEL.stdin]), () => callback());
      else callback();
    },
  });

  const resize = (size: { rows: number; cols: number }) => {
    if (tty) send(CHANNEL.resize, Buffer.from(JSON.stringify({ Width: size.cols, Height: size.rows })));
  };
  if (request.tty) resize(request.tty);

  return {
    stdin,
    stdout,
    stderr,
    resize,
    kill: () => ws.close(),
    exited,
  };
}
