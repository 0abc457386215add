/**
 * The supervisor of one instance (like containerd-shim): the platform starts it detached, it
 * starts the instance and holds its stdout/stderr pipes, so the instance outlives the platform
 * process (a `kill -9` of the API, an upgrade) and its output never meets a dead reader.
 *
 * It reads its settings from stdin (JSON, see ShimSettings: the instance's environment never
 * becomes its own, so no tenant variable such as NODE_OPTIONS reaches this root process),
 * listens on a unix socket in the platform's 0700 directory, and says hello (which process it
 * runs) to whoever connects; to the platform that accepts it (again after a restart: the newest
 * accepting connection replaces the old one) it sends framed output chunks, counts of dropped
 * output, the exit, until that platform releases it (going, it reads until the shim closes).
 * While nobody reads, at most `bufferBytes` of output wait; past that output is dropped and
 * counted (in lines, where they begin).
 * It exits when the instance has ended and the exit was delivered (or nobody came for
 * `lingerMs`). Only node: built-ins, so it starts fast and small.
 */
import { spawn } from 'node:child_process';
import { chmodSync, closeSync, readFileSync, unlinkSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { LINE_CUT_MARKER } from '../../logs/bounded-lines.js';
import { endsMidLine, lineStarts } from './line-starts.js';
import { encodeFrame, FRAME, PLATFORM_SAYS, SHIM_PROTOCOL, type ShimHello, type ShimSettings } from './shim-protocol.js';

const settings = JSON.parse(readFileSync(0, 'utf8')) as ShimSettings;

/** Frames waiting for a reader; output is framed as it is written (see `pump`). */
const queue: Array<{ type: number; payload: Buffer }> = [];
let queued = 0;
let dropped = { lines: 0, bytes: 0 };
let client: Socket | null = null;
let exited = false;

const child = spawn(settings.file, settings.args, {
  cwd: settings.cwd,
  env: settings.env,
  // Its own process group: the platform signals the instance's group, never this supervisor.
  detached: true,
  // The sandbox's control pipes (fds 3..) go straight through to bubblewrap.
  stdio: ['ignore', 'pipe', 'pipe', ...Array.from({ length: settings.controlFds }, (_, i) => 3 + i)],
});
// Our copies would keep the platform from seeing the sandbox's info pipe end.
for (let i = 0; i < settings.controlFds; i++) closeSync(3 + i);

/** Where each output stream stands, so a flood is cut at line boundaries a reader can count. */
interface StreamState {
  /** The last byte queued was inside a line: the reader will hold the start of a line. */
  open: boolean;
  /** Inside a line whose start was dropped: the rest of it is dropped too, up to its newline. */
  skipping: boolean;
  /** The last byte written to the reader was inside a line (what it holds unfinished). */
  readerMidLine: boolean;
}
const streams = new Map<number, StreamState>(
  [FRAME.stdout, FRAME.stderr].map((type) => [type, { open: false, skipping: false, readerMidLine: false }]),
);
const FRAME_HEADER_BYTES = 5;

/** Connections released by a going platform process, still flushing what was written to them. */
const released = new Set<Socket>();
/** How long a released connection may take to be read to its end (a reader that stopped reading). */
const RELEASED_FLUSH_MS = 10_000;

function fits(bytes: number): boolean {
  let held = queued + (client?.writableLength ?? 0) + bytes;
  for (const socket of released) held += socket.writableLength;
  return held <= settings.bufferBytes;
}

function enqueue(type: number, payload: Buffer) {
  queue.push({ type, payload });
  queued += FRAME_HEADER_BYTES + payload.length;
  pump();
}

/**
 * Hands output on while it fits the bound; past it, drops it and counts the lines that begin in
 * it. A line whose start was handed on is ended with the cut marker (the reader then drops its
 * last characters, where a secret may begin); the rest of a line whose start was dropped is
 * dropped too (it may begin with the end of a secret).
 */
function output(type: number, chunk: Buffer) {
  const stream = streams.get(type)!;
  if (stream.skipping) {
    const { ended, rest } = afterLine(chunk);
    stream.skipping = !ended;
    if (!rest) return;
    chunk = rest;
  }
  if (fits(chunk.length)) {
    // The count goes before the output it preceded (a count of no whole line waits for one).
    if (dropped.lines > 0) {
      const counts = dropped;
      dropped = { lines: 0, bytes: 0 };
      enqueue(FRAME.dropped, Buffer.from(JSON.stringify(counts)));
    }
    stream.open = endsMidLine(chunk, stream.open);
    return enqueue(type, chunk);
  }
  dropped.lines += lineStarts(chunk, stream.open);
  dropped.bytes += chunk.length;
  stream.skipping = endsMidLine(chunk, stream.open);
  if (stream.open) {
    stream.open = false;
    enqueue(type, Buffer.from(`${LINE_CUT_MARKER}\n`));
  }
}

/**
 * Drops the chunk up to its first newline (counted): whether one `ended` the line, and the `rest`
 * after it (`null`: nothing follows).
 */
function afterLine(chunk: Buffer): { ended: boolean; rest: Buffer | null } {
  const newline = chunk.indexOf(0x0a);
  dropped.bytes += newline < 0 ? chunk.length : newline + 1;
  if (newline < 0 || newline === chunk.length - 1) return { ended: newline >= 0, rest: null };
  // A copy: a view would hold the whole read (64 KiB) for the few bytes the bound counts.
  return { ended: true, rest: Buffer.from(chunk.subarray(newline + 1)) };
}

/**
 * The reader went away (replaced, or its connection closed) holding the start of a line: that line
 * is lost (counted), and its rest, queued or still to come, is not written to the next reader,
 * which would take it for a line of its own (it may begin with the end of a secret).
 */
function readerGone() {
  for (const [type, stream] of streams) {
    if (!stream.readerMidLine) continue;
    stream.readerMidLine = false;
    dropped.lines++;
    if (!dropQueuedRestOfLine(type)) {
      stream.skipping = true;
      stream.open = false;
    }
  }
}

/** Drops the queued output of `type` up to its first newline; says whether one was queued. */
function dropQueuedRestOfLine(type: number): boolean {
  for (let i = 0; i < queue.length; i++) {
    const entry = queue[i]!;
    if (entry.type !== type) continue;
    const before = entry.payload.length;
    const { ended, rest } = afterLine(entry.payload);
    if (rest) {
      queued -= before - rest.length;
      entry.payload = rest;
    } else {
      queued -= FRAME_HEADER_BYTES + before;
      queue.splice(i--, 1);
    }
    if (ended) return true;
  }
  return false;
}

function pump() {
  while (client && queue.length > 0 && client.writableLength < settings.bufferBytes) {
    const { type, payload } = queue.shift()!;
    queued -= FRAME_HEADER_BYTES + payload.length;
    const stream = streams.get(type);
    if (stream) stream.readerMidLine = endsMidLine(payload, stream.readerMidLine);
    client.write(encodeFrame(type, payload));
  }
  if (exited && queue.length === 0 && client) client.end(() => finish());
}

function finish() {
  try {
    unlinkSync(settings.socket);
  } catch {
    /* already gone */
  }
  process.exit(0);
}

child.stdout!.on('data', (c: Buffer) => output(FRAME.stdout, c));
child.stderr!.on('data', (c: Buffer) => output(FRAME.stderr, c));
child.on('error', (err) => {
  output(FRAME.stderr, Buffer.from(`failed to start: ${err.message}\n`));
  if (child.pid === undefined) onExit(127, null);
});
child.on('close', (code, signal) => onExit(code, signal));

function onExit(code: number | null, signal: NodeJS.Signals | null) {
  if (exited) return;
  if (dropped.lines > 0) enqueue(FRAME.dropped, Buffer.from(JSON.stringify(dropped)));
  enqueue(FRAME.exit, Buffer.from(JSON.stringify({ code, signal })));
  exited = true;
  pump();
  // Nobody reads (the platform is away): the instance is gone, a later platform starts it again.
  setTimeout(finish, settings.lingerMs).unref();
}

/** The process start time (clock ticks since boot, field 22 of /proc/<pid>/stat): a reused pid has another. */
function startTicks(pid: number | undefined): string | null {
  if (!pid) return null;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

const hello: ShimHello = {
  protocol: SHIM_PROTOCOL,
  id: settings.id,
  pid: child.pid ?? null,
  startTicks: startTicks(child.pid),
  shimPid: process.pid,
};

const server = createServer((socket) => {
  socket.on('error', () => socket.destroy());
  socket.on('close', () => {
    if (client !== socket) return;
    client = null;
    readerGone();
  });
  socket.on('drain', pump);
  socket.on('data', (said: Buffer) => {
    for (const byte of said) {
      if (released.has(socket)) return;
      // Output goes only to a platform that accepted this shim's hello: a connection that refuses
      // it (not the process on its record) must not carry held output away with it.
      if (byte === PLATFORM_SAYS.accept && client !== socket) take(socket);
      if (byte === PLATFORM_SAYS.release) release(socket);
    }
  });
  socket.write(encodeFrame(FRAME.hello, Buffer.from(JSON.stringify(hello))));
});

/** The accepting platform replaces the one that went away. */
function take(socket: Socket) {
  if (client) {
    client.destroy();
    readerGone();
  }
  client = socket;
  pump();
}

/**
 * The platform process is going and reads what was written until this connection closes: what
 * follows waits for the next one (a reader that simply vanishes loses what was in flight).
 */
function release(socket: Socket) {
  released.add(socket);
  socket.once('close', () => released.delete(socket));
  setTimeout(() => socket.destroy(), RELEASED_FLUSH_MS).unref();
  if (client === socket) {
    client = null;
    readerGone();
  }
  socket.end();
}

try {
  unlinkSync(settings.socket);
} catch {
  /* none left */
}
server.listen(settings.socket, () => chmodSync(settings.socket, 0o600));
server.on('error', () => {
  // Without its socket nobody can follow the instance: it must not run unsupervised.
  if (child.pid) {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  process.exit(1);
});
