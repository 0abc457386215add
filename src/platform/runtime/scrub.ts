import { StringDecoder } from 'node:string_decoder';
import { LINE_CUT_MARKER } from '../logs/bounded-lines.js';

/** What replaces a secret value in any captured output. */
const SCRUBBED = '**secret**';

/** Lines of a multi-line secret shorter than this are too common to hide (e.g. a blank or `}`). */
const MIN_FRAGMENT = 8;

/**
 * Output is scrubbed line by line, so a multi-line secret (a PEM key) would never match as a
 * whole: each of its substantial lines is hidden as well.
 */
function secretFragments(values: string[]): string[] {
  const out = new Set<string>();
  for (const v of values) {
    if (!v) continue;
    out.add(v);
    if (/[\r\n]/.test(v)) for (const line of v.split(/\r?\n/)) if (line.trim().length >= MIN_FRAGMENT) out.add(line.trim());
  }
  return [...out];
}

/** Replaces every occurrence of the given secret values (longest first, so overlaps stay hidden). */
export function scrubber(secrets: string[]): (text: string) => string {
  return scrubberWithLongest(secrets).scrub;
}

function scrubberWithLongest(secrets: string[]): { scrub: (text: string) => string; longest: number } {
  const values = secretFragments(secrets).sort((a, b) => b.length - a.length);
  if (values.length === 0) return { scrub: (text) => text, longest: 0 };
  const longest = values[0]!.length;
  const hide = (text: string) => {
    let out = text;
    for (const v of values) out = out.split(v).join(SCRUBBED);
    return out;
  };
  return {
    longest,
    // A line cut by a bounded reader may end with the first characters of a secret whose rest was
    // dropped: those last `longest - 1` characters go too.
    // A character cut in two before the marker decodes as U+FFFD: it is no character of the line's, so it goes first.
    scrub: (text) =>
      text.endsWith(LINE_CUT_MARKER)
        ? hide(text.slice(0, -LINE_CUT_MARKER.length).replace(/\uFFFD+$/, '')).slice(0, -(longest - 1) || undefined) + LINE_CUT_MARKER
        : hide(text),
  };
}

/**
 * Splits a byte stream into scrubbed lines. Secrets are matched per whole line, so a value
 * split across two chunks is still caught. An overlong line is cut into pieces of `maxLine`,
 * but only after scrubbing, and the last `longest secret - 1` characters stay behind for the
 * next piece: a secret whose start arrived before the cut and whose end has not arrived yet is
 * then matched whole when the rest comes. `admit` (e.g. a rate limit) is asked before a line
 * is scrubbed; a line it refuses is dropped unscrubbed and unseen.
 */
export class LineScrubber {
  private partial = '';
  /** Inside a line whose middle was dropped: skipped up to its newline. */
  private skipping = false;
  /** The partial line's first piece was already emitted (an overlong line is being cut). */
  private continuing = false;
  private readonly scrub: (t: string) => string;
  private readonly holdBack: number;
  /** Keeps a multi-byte character split between two chunks whole. */
  private readonly decoder = new StringDecoder('utf8');

  constructor(
    secrets: string[],
    private readonly emit: (line: string) => void,
    private readonly maxLine = 16 * 1024,
    /** Asked for each line or piece; `continuing`: an earlier piece of the same line was emitted. */
    private readonly admit: (line: string, continuing: boolean) => boolean = () => true,
  ) {
    const { scrub, longest } = scrubberWithLongest(secrets);
    this.scrub = scrub;
    this.holdBack = Math.max(0, longest - 1);
  }

  write(chunk: Buffer | string) {
    let text = typeof chunk === 'string' ? chunk : this.decoder.write(chunk);
    if (this.skipping) {
      const nl = text.indexOf('\n');
      if (nl < 0) return;
      this.skipping = false;
      text = text.slice(nl + 1);
    }
    this.partial += text;
    let start = 0;
    let nl: number;
    while ((nl = this.partial.indexOf('\n', start)) >= 0) {
      const line = this.partial.slice(start, nl).replace(/\r$/, '');
      if (this.admit(line, this.continuing)) this.emit(this.scrub(line));
      start = nl + 1;
      this.continuing = false;
    }
    this.partial = this.partial.slice(start);
    while (this.partial.length > this.maxLine) {
      if (!this.admit(this.partial.slice(0, this.maxLine), this.continuing)) {
        this.discardPartial();
        return;
      }
      const clean = this.scrub(this.partial.slice(0, this.maxLine + this.holdBack));
      const cut = Math.max(1, Math.min(this.maxLine, clean.length - this.holdBack));
      this.emit(clean.slice(0, cut));
      this.continuing = true;
      this.partial = clean.slice(cut) + this.partial.slice(this.maxLine + this.holdBack);
    }
  }

  /**
   * Forgets the partial line and, unless `lineEnded` (the dropped output ended it), skips the rest
   * of it when it comes (its middle is being dropped: what follows could begin with the end of a
   * secret whose start was dropped). Says whether a line's start was forgotten unemitted.
   */
  discardPartial(lineEnded = false): boolean {
    // A start may be held by the decoder alone (the first bytes of a character); it goes too.
    const held = this.decoder.end();
    const forgotStart = !this.skipping && !this.continuing && (this.partial.length > 0 || held.length > 0);
    this.partial = '';
    this.continuing = false;
    this.skipping = !lineEnded;
    return forgotStart;
  }

  /** Emits the unfinished line; `cut`: its rest was lost (it ends with the cut marker and may end with a secret's start). */
  end(cut = false) {
    const rest = this.decoder.end();
    if (!this.skipping) this.partial += rest;
    const text = cut ? this.partial + LINE_CUT_MARKER : this.partial;
    if (this.partial.length > 0 && this.admit(text, this.continuing)) this.emit(this.scrub(text));
    this.partial = '';
    this.skipping = false;
    this.continuing = false;
  }
}
