/** A log line as the streams send it. */
export interface StreamedLine {
  line: string;
  timestamp: string;
}

const STAMPED = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z) (.*)$/s;

/**
 * The complete lines of a record's log (a trailing partial line waits for its newline,
 * unless the record is final). Lines a writer stamped (deployment logs) keep their stamp
 * as `timestamp`; others carry the time the record was last written.
 */
export function completeLines(text: string, final: boolean): string[] {
  if (!text) return [];
  const lines = text.split('\n');
  const partial = lines.pop()!;
  if (final && partial) lines.push(partial);
  return lines;
}

export function streamedLine(raw: string, fallback: Date): StreamedLine {
  const m = STAMPED.exec(raw);
  return m ? { line: m[2]!, timestamp: m[1]! } : { line: raw, timestamp: fallback.toISOString() };
}

/** Resumption cursor of a single-log stream: the number of lines already sent (`12`, or `12-end`). */
export function lineCursor(lastEventId: string | undefined): number {
  const n = lastEventId ? Number.parseInt(lastEventId, 10) : 0;
  return Number.isFinite(n) && n > 0 ? n : 0;
}
