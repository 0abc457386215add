import { parseDotenv } from './dotenv.js';

/** What became of one variable of an import. */
export interface ImportOutcome {
  name: string;
  result: 'created' | 'updated' | 'skipped' | 'error';
  message?: string | null;
}

/**
 * Imports dotenv text into a configuration layer whose bulk route takes entries (every layer
 * but the application's, whose route parses the text itself). The text is parsed with the
 * server's own parser and `flags` applied to every entry; the lines it cannot read come back as
 * errors after the route's own results. Shared by the CLI and the dashboard.
 */
export async function importDotenvAsEntries<F extends object>(
  text: string,
  flags: F,
  bulk: (entries: Array<{ name: string; value: string } & F>) => Promise<ImportOutcome[]>,
): Promise<ImportOutcome[]> {
  const parsed = parseDotenv(text);
  const results = parsed.entries.length > 0 ? await bulk(parsed.entries.map((e) => ({ ...e, ...flags }))) : [];
  return [
    ...results.map((r) => ({ name: r.name, result: r.result, message: r.message })),
    ...parsed.errors.map((e) => ({ name: e.name, result: 'error' as const, message: e.message })),
  ];
}
