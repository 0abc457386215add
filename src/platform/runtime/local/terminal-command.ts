import type { TerminalSize } from '../port.js';

/** One word for `sh`, single-quoted. */
export function shellQuote(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * `command` run under a new pseudo-terminal of `size` inside the sandbox (the sandbox's own
 * /dev/pts), through util-linux `script`, which passes its standard input to the terminal and
 * exits with the command's status. A release whose root has no `script` says so and exits 127.
 */
export function underTerminal(command: string, size: TerminalSize, term: string): string {
  const inner = `stty rows ${size.rows} cols ${size.cols} 2>/dev/null; exec sh -c ${shellQuote(command)}`;
  const missing =
    'slipway: this release has no `script` (util-linux) to give the command a terminal; run it without one: slipway run --no-tty';
  return [
    `command -v script >/dev/null 2>&1 || { echo ${shellQuote(missing)} >&2; exit 127; }`,
    `export TERM=${shellQuote(term)} SHELL=/bin/sh`,
    `exec script -qfec ${shellQuote(inner)} /dev/null`,
  ].join('\n');
}
