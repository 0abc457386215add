/**
 * What the instance shim (instance-shim.ts) and the platform say to each other over the shim's
 * unix socket: frames of one type byte, a 4-byte big-endian length and the payload.
 */

/** What the platform hands a shim on its stdin. */
export interface ShimSettings {
  /** The instance id (its `instances` row). */
  id: string;
  file: string;
  args: string[];
  cwd: string;
  /** The instance's environment (never the shim's own). */
  env: Record<string, string>;
  /** Where the shim listens. */
  socket: string;
  /** Output waiting for a reader at most; beyond it is dropped and counted. */
  bufferBytes: number;
  /** The sandbox's control pipes on fds 3.., passed through to bubblewrap (0 unsandboxed). */
  controlFds: number;
  /** How long an ended instance's exit waits for a reader. */
  lingerMs: number;
}

/**
 * The version of these messages and of how a shim cuts dropped output. A platform adopts the
 * shims of ADOPTED_SHIM_PROTOCOLS; others' instances are replaced at its start. Raise it on any
 * change.
 */
export const SHIM_PROTOCOL = 4;

/**
 * The versions a platform of this version adopts, so an upgrade keeps the instances and add-on
 * servers running instead of restarting them all. 2 and 3 frame everything as 4 does. 3 does not
 * answer a release (the platform lets go of it at once, as before). 2 also cuts a flood less
 * carefully (no cut marker, a dropped line's rest handed on), which the platform makes up for
 * (local-driver.ts: it skips to a newline on adoption and after each drop).
 */
export const ADOPTED_SHIM_PROTOCOLS: readonly number[] = [2, 3, SHIM_PROTOCOL];

/** The first protocol whose shim cuts a flood at lines (see ADOPTED_SHIM_PROTOCOLS). */
export const LINE_CUTTING_SHIM_PROTOCOL = 3;

/** The first protocol whose shim answers a release. */
export const RELEASING_SHIM_PROTOCOL = 4;

/**
 * The bytes a platform sends a shim. `accept`: its hello names the process on record, output goes
 * to this connection. `release`: this platform process is going (a graceful stop that keeps
 * serving); the shim stops writing, holds what follows for the next one and closes the connection,
 * so nothing is written to a reader that will never read it.
 */
export const PLATFORM_SAYS = { accept: 1, release: 2 } as const;

/** The first frame on every connection: which process the shim runs. */
export interface ShimHello {
  protocol: number;
  id: string;
  pid: number | null;
  /** /proc/<pid>/stat start time (defeats pid reuse). */
  startTicks: string | null;
  shimPid: number;
}

export const FRAME = { hello: 1, stdout: 2, stderr: 3, dropped: 4, exit: 5 } as const;

/** Largest frame either side accepts (the shim sends pipe reads, at most 64 KiB each). */
export const MAX_FRAME_BYTES = 1024 * 1024;

export function encodeFrame(type: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(5);
  header.writeUInt8(type, 0);
  header.writeUInt32BE(payload.length, 1);
  return Buffer.concat([header, payload]);
}

/** Splits a byte stream into frames; a frame over MAX_FRAME_BYTES is an error (the stream is not a shim's). */
export class FrameReader {
  private pending: Buffer = Buffer.alloc(0);

  constructor(private readonly onFrame: (type: number, payload: Buffer) => void) {}

  write(chunk: Buffer): void {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    while (this.pending.length >= 5) {
      const length = this.pending.readUInt32BE(1);
      if (length > MAX_FRAME_BYTES) throw new Error(`a frame of ${length} bytes from an instance shim`);
      if (this.pending.length < 5 + length) return;
      const type = this.pending.readUInt8(0);
      const payload = this.pending.subarray(5, 5 + length);
      this.pending = this.pending.subarray(5 + length);
      this.onFrame(type, payload);
    }
  }
}
