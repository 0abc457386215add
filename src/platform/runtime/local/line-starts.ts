/**
 * Dropped output is counted in lines where they begin: a line split between a kept chunk and a
 * dropped one is then counted once, as delivered (cut) or as dropped, never twice or not at all.
 */

const NEWLINE = 0x0a;

/** How many lines begin in `chunk`; `continuesLine` says the byte before it was not a newline. */
export function lineStarts(chunk: Buffer, continuesLine: boolean): number {
  if (chunk.length === 0) return 0;
  let starts = continuesLine ? 0 : 1;
  for (let i = chunk.indexOf(NEWLINE); i >= 0 && i < chunk.length - 1; i = chunk.indexOf(NEWLINE, i + 1)) starts++;
  return starts;
}

/** Whether what follows `chunk` continues its last line (an empty chunk changes nothing). */
export function endsMidLine(chunk: Buffer, before: boolean): boolean {
  return chunk.length === 0 ? before : chunk[chunk.length - 1] !== NEWLINE;
}
