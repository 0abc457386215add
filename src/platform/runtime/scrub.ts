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
  return {
    longest: values[0]!.length,
    scrub: (text) => {
      let out = text;
      for (const v of values) out = out.split(v).join(SCRUBBED);
      return out;
    },
  };
}

/**
 * Splits a byte stream into scrubbed lines. Secrets are matched per whole line, so a value
 * split across two chunks is still caught. An overlong line is cut at `maxLine`, but only
 * after scrubbing, and the last `longest secret - 1` characters stay behind for the next
 * piece: a secret whose start arrived before the cut and whose end has not arrived yet is
 * then matched whole when the rest comes.
 */
export class LineScrubber {
  private partial = '';
  private readonly scrub: (t: string) => string;
  private readonly holdBack: number;

  constructor(
    secrets: string[],
    private readonly emit: (line: string) => void,
    private readonly maxLine = 16 * 1024,
  ) {
    const { scrub, longest } = scrubberWithLongest(secrets);
    this.scrub = scrub;
    this.holdBack = Math.max(0, longest - 1);
  }

  write(chunk: Buffer | string) {
    this.partial += chunk.toString();
    let nl: number;
    while ((nl = this.partial.indexOf('\n')) >= 0) {
      this.emit(this.scrub(this.partial.slice(0, nl).replace(/\r$/, '')));
      this.partial = this.partial.slice(nl + 1);
    }
    if (this.partial.length > this.maxLine) {
      const clean = this.scrub(this.partial);
      const cut = Math.max(1, clean.length - this.holdBack);
      this.emit(clean.slice(0, cut));
      this.partial = clean.slice(cut);
    }
  }

  end() {
    if (this.partial.length > 0) this.emit(this.scrub(this.partial));
    this.partial = '';
  }
}
