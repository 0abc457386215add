import { scrubber } from './scrub.js';

/**
 * Scrubs secret values from an interactive byte stream (an attached one-off run) without
 * waiting for whole lines: a prompt with no newline must show at once. Everything is passed
 * on except a tail that could be the start of a secret (at most the longest secret minus one
 * byte), held until the next chunk or the end decides; the buffer is bounded by the secrets'
 * length. Matching is byte for byte (latin1 strings), so binary output passes unchanged.
 */
export class StreamScrubber {
  private held = '';
  private readonly scrub: (text: string) => string;
  private readonly values: string[];

  constructor(
    secrets: string[],
    private readonly emit: (bytes: Buffer) => void,
  ) {
    this.values = secrets.filter((s) => s.length > 0).map((s) => Buffer.from(s, 'utf8').toString('latin1'));
    this.scrub = scrubber(this.values);
  }

  write(chunk: Buffer): void {
    const text = this.scrub(this.held + chunk.toString('latin1'));
    const keep = this.possibleSecretStart(text);
    this.held = text.slice(text.length - keep);
    if (text.length > keep) this.emit(Buffer.from(text.slice(0, text.length - keep), 'latin1'));
  }

  end(): void {
    const rest = this.held;
    this.held = '';
    if (rest) this.emit(Buffer.from(rest, 'latin1'));
  }

  /** Length of the longest suffix of `text` that begins some secret value (0: nothing to hold). */
  private possibleSecretStart(text: string): number {
    let best = 0;
    for (const v of this.values) {
      for (let n = Math.min(v.length - 1, text.length); n > best; n--) {
        if (text.endsWith(v.slice(0, n))) {
          best = n;
          break;
        }
      }
    }
    return best;
  }
}
