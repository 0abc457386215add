/**
 * Bounded readers for output the platform does not control (builds, instances, git, buildah):
 * however much a tenant's process prints, and however long one of its lines is, the memory
 * held here stays below a fixed size.
 */

/** Longest line kept (bytes); the rest of a longer line is dropped up to its newline. */
export const MAX_LINE_BYTES = 16 * 1024;

/** Appended to a line that was cut; the scrubber recognises it (see `scrubber`). */
export const LINE_CUT_MARKER = ' [slipway: line cut]';

/** Bytes of recent output kept for an error message. */
export const TAIL_BYTES = 64 * 1024;

const NEWLINE = 0x0a;

/**
 * Splits a byte stream into lines of at most `maxLineBytes` (a longer line is emitted once,
 * cut, with {@link LINE_CUT_MARKER}; the rest of it is skipped up to its newline). Works on
 * bytes, so a multi-byte character split between two chunks stays whole, and a line that
 * never ends holds at most `maxLineBytes` in memory.
 */
export class LineSplitter {
  private readonly pieces: Buffer[] = [];
  private held = 0;
  /** Inside a line already emitted cut: its bytes are skipped up to the next newline. */
  private skipping = false;

  constructor(
    private readonly emit: (line: string) => void,
    private readonly maxLineBytes = MAX_LINE_BYTES,
  ) {}

  write(chunk: Buffer | string): void {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    let start = 0;
    while (start < buf.length) {
      const nl = buf.indexOf(NEWLINE, start);
      const end = nl < 0 ? buf.length : nl;
      if (!this.skipping) this.hold(buf.subarray(start, end));
      if (nl < 0) return;
      if (this.skipping) this.skipping = false;
      else this.flushLine(false);
      start = nl + 1;
    }
  }

  /** Emits what is left of an unterminated last line. */
  end(): void {
    if (this.held > 0 && !this.skipping) this.flushLine(false);
    this.pieces.length = 0;
    this.held = 0;
    this.skipping = false;
  }

  private hold(part: Buffer) {
    if (part.length === 0) return;
    const room = this.maxLineBytes - this.held;
    if (part.length <= room) {
      // Copied: the chunk's buffer is reused by the stream, and a small slice must not pin a large one.
      this.pieces.push(Buffer.from(part));
      this.held += part.length;
      return;
    }
    if (room > 0) this.pieces.push(Buffer.from(part.subarray(0, room)));
    this.held = this.maxLineBytes;
    this.flushLine(true);
    this.skipping = true;
  }

  private flushLine(cut: boolean) {
    let text = Buffer.concat(this.pieces, this.held).toString('utf8');
    this.pieces.length = 0;
    this.held = 0;
    if (text.endsWith('\r')) text = text.slice(0, -1);
    this.emit(cut ? text + LINE_CUT_MARKER : text);
  }
}

/** The most recent lines of a stream, at most `maxBytes` in all (older lines fall out first). */
export class LineTail {
  private lines: string[] = [];
  /** Index of the oldest kept line (lines before it are dropped; compacted now and then). */
  private first = 0;
  private bytes = 0;
  private dropped = false;

  constructor(private readonly maxBytes = TAIL_BYTES) {}

  push(line: string): void {
    this.lines.push(line);
    this.bytes += line.length + 1;
    while (this.bytes > this.maxBytes && this.lines.length - this.first > 1) {
      this.bytes -= this.lines[this.first]!.length + 1;
      this.first++;
      this.dropped = true;
    }
    if (this.first > 4096 && this.first * 2 > this.lines.length) {
      this.lines = this.lines.slice(this.first);
      this.first = 0;
    }
  }

  /** The kept lines, newline-terminated (as the stream had them); a leading marker when older ones were dropped. */
  text(): string {
    if (this.lines.length === this.first) return '';
    const kept = this.lines.slice(this.first).join('\n');
    return `${this.dropped ? '[slipway: earlier output dropped]\n' : ''}${kept}\n`;
  }
}

/**
 * The last `maxBytes` bytes of a stream, kept without splitting it (cheap however fast the
 * stream is); `lines()` splits them at the end, dropping the first line when it was cut.
 */
export class ByteTail {
  private chunks: Buffer[] = [];
  private size = 0;
  private dropped = false;

  constructor(private readonly maxBytes = TAIL_BYTES) {}

  write(chunk: Buffer): void {
    // Copied: the stream reuses its buffers.
    this.chunks.push(Buffer.from(chunk.length > this.maxBytes ? chunk.subarray(chunk.length - this.maxBytes) : chunk));
    this.size += Math.min(chunk.length, this.maxBytes);
    if (chunk.length > this.maxBytes) this.dropped = true;
    while (this.size - this.chunks[0]!.length >= this.maxBytes) {
      this.size -= this.chunks.shift()!.length;
      this.dropped = true;
    }
  }

  get empty(): boolean {
    return this.size === 0;
  }

  /** The kept bytes as lines (each cut at MAX_LINE_BYTES), into `tail`. */
  linesInto(tail: LineTail): void {
    let bytes = Buffer.concat(this.chunks, this.size);
    if (bytes.length > this.maxBytes) bytes = bytes.subarray(bytes.length - this.maxBytes);
    if (this.dropped) {
      // The first line began before what was kept: show only the lines that are whole.
      const nl = bytes.indexOf(NEWLINE);
      bytes = nl < 0 ? bytes.subarray(bytes.length) : bytes.subarray(nl + 1);
      tail.push('[slipway: earlier output dropped]');
    }
    const splitter = new LineSplitter((line) => tail.push(line));
    splitter.write(bytes);
    splitter.end();
  }
}

/** Raised when a command's whole output was needed and it printed more than allowed. */
export class OutputTooLarge extends Error {
  constructor(
    readonly program: string,
    readonly limitBytes: number,
  ) {
    super(`${program} printed more than ${Math.round(limitBytes / 1024)} KiB on its standard output; refused to read further`);
  }
}

/** Keeps the beginning of a stream up to `maxBytes`; reports overflow instead of growing. */
export class BoundedCapture {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  overflowed = false;

  constructor(private readonly maxBytes: number) {}

  /** False once more than `maxBytes` arrived (nothing more is kept). */
  write(chunk: Buffer): boolean {
    if (this.overflowed) return false;
    if (this.size + chunk.length > this.maxBytes) {
      this.overflowed = true;
      this.chunks.length = 0;
      return false;
    }
    this.chunks.push(chunk);
    this.size += chunk.length;
    return true;
  }

  text(): string {
    return Buffer.concat(this.chunks, this.size).toString('utf8');
  }
}
