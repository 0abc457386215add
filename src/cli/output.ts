import Table from 'cli-table3';
import ora, { type Ora } from 'ora';
import { createColors } from 'picocolors';

export type Colors = ReturnType<typeof createColors>;

/** Escape sequences as terminals read them: CSI (`ESC [ … final`) and OSC/DCS/APC/PM/SOS strings (`ESC ] … BEL|ST`). */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const ESCAPE_SEQUENCE = /\u001b\[[0-?]*[ -/]*[@-~]|\u001b[\]PX^_][^\u0007\u001b]*(?:\u0007|\u001b\\)?|\u001b[@-_]?/g;
/**
 * C0 controls but tab and newline, DEL, the C1 controls (U+0080–U+009F: 8-bit CSI, OSC…), and
 * the invisible format characters that reorder or hide text (zero-width, bidirectional
 * embeddings, overrides and isolates, word joiners, BOM).
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g;

/**
 * Text from the server (logs an application wrote, names, error messages) made safe to show:
 * escape sequences and control characters but tab and newline removed, so a log line cannot
 * retitle, clear or rewrite the user's terminal, fake earlier output with `\r`, or hide text.
 * Applied to every human output, terminal or not (a file or pipe is read on a terminal later).
 */
export function terminalSafe(text: string): string {
  return text.replace(ESCAPE_SEQUENCE, '').replace(CONTROL, '');
}

/** Column of a table: a header and how to read the cell from a row. */
export interface Column<T> {
  header: string;
  value: (row: T) => unknown;
}

/**
 * Everything the CLI prints goes through here: tables for people, JSON for scripts, colour
 * only on a terminal without NO_COLOR, spinners only on a terminal and never with --json.
 * Data goes to stdout; progress and notes to stderr, so `slipway x --json | jq` stays clean.
 */
export class Output {
  readonly colors: Colors;
  readonly interactive: boolean;

  constructor(
    readonly json: boolean,
    env: NodeJS.ProcessEnv = process.env,
    readonly stdout: NodeJS.WriteStream = process.stdout,
    readonly stderr: NodeJS.WriteStream = process.stderr,
  ) {
    const noColor = env.NO_COLOR !== undefined && env.NO_COLOR !== '';
    const forced = env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '0';
    this.colors = createColors(!noColor && (forced || Boolean(stdout.isTTY)));
    this.interactive = Boolean(stderr.isTTY) && !json;
  }

  /** A value for scripts (with --json) or a line for people. */
  result(value: unknown, human: () => string | string[]) {
    if (this.json) this.printJson(value);
    else this.print(human());
  }

  printJson(value: unknown) {
    this.stdout.write(`${jsonText(value, 2)}\n`);
  }

  print(text: string | string[]) {
    const lines = Array.isArray(text) ? text : [text];
    for (const line of lines) this.stdout.write(`${line}\n`);
  }

  /** A note for people (stderr), silent with --json. */
  note(text: string) {
    if (!this.json) this.stderr.write(`${text}\n`);
  }

  warn(text: string) {
    this.stderr.write(`${this.colors.yellow('warning:')} ${text}\n`);
  }

  /** Rows as a table (or as JSON with --json). */
  table<T>(rows: T[], columns: Column<T>[], empty = 'nothing yet') {
    if (this.json) return this.printJson(rows);
    if (rows.length === 0) return this.note(empty);
    const table = new Table({
      head: columns.map((c) => this.colors.bold(c.header)),
      style: { head: [], border: [], compact: true },
      chars: {
        top: '',
        'top-mid': '',
        'top-left': '',
        'top-right': '',
        bottom: '',
        'bottom-mid': '',
        'bottom-left': '',
        'bottom-right': '',
        left: '',
        'left-mid': '',
        mid: '',
        'mid-mid': '',
        right: '',
        'right-mid': '',
        middle: '  ',
      },
    });
    for (const row of rows) table.push(columns.map((c) => cell(c.value(row))));
    this.print(
      table
        .toString()
        .split('\n')
        .map((l) => l.replace(/^ /, '').trimEnd()),
    );
  }

  /** Label/value pairs (an object's fields), or the object as JSON. */
  fields(value: unknown, pairs: Array<[string, unknown]>) {
    if (this.json) return this.printJson(value);
    const width = Math.max(...pairs.map(([k]) => k.length));
    this.print(pairs.map(([k, v]) => `${this.colors.bold(k.padEnd(width))}  ${cell(v)}`));
  }

  /** A spinner on a terminal; elsewhere a no-op that prints nothing. */
  spinner(text: string): Ora {
    // A terminal of no width (a pty nobody sized, as `script` makes) would make ora clear lines forever.
    const enabled = this.interactive && (this.stderr.columns ?? 0) > 0;
    return ora({ text, stream: this.stderr, isEnabled: enabled, isSilent: !enabled });
  }

  status(status: string): string {
    if (/^(complete|built|succeeded|running|up)$/.test(status)) return this.colors.green(status);
    if (/^(error|failed|timed_out|crashed)$/.test(status)) return this.colors.red(status);
    return this.colors.yellow(status);
  }
}

/**
 * JSON text whose strings carry no raw C1 control either (JSON.stringify escapes only C0):
 * `\u009b` is a CSI to terminals that read 8-bit controls.
 */
export function jsonText(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent).replace(
    /[\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

function cell(value: unknown): string {
  if (value === null || value === undefined || value === '') return '-';
  if (typeof value === 'object')
    return (
      Object.entries(value)
        .map(([k, v]) => `${terminalSafe(k)}=${terminalSafe(String(v))}`)
        .join(' ') || '-'
    );
  return terminalSafe(String(value));
}

/** `2026-01-02T03:04:05.678Z` → `2026-01-02 03:04:05`. */
export function when(iso: string | null | undefined): string {
  return iso ? iso.replace('T', ' ').replace(/\.\d+Z$|Z$/, '') : '-';
}
