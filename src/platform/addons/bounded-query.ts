import pg from 'pg';

export interface BoundedResult {
  command: string;
  rowCount: number | null;
  columns: string[];
  /** The last statement's rows, values as text. */
  rows: Array<Array<string | null>>;
  /** The last statement had more rows (or bytes) than kept: the rest was never read. */
  truncated: boolean;
}

const asText = (v: unknown): string | null =>
  v === null || v === undefined
    ? null
    : Buffer.isBuffer(v)
      ? `\\x${v.toString('hex')}`
      : typeof v === 'object'
        ? JSON.stringify(v)
        : String(v);

/**
 * Runs SQL someone typed (`slipway addons psql`) keeping at most `maxRows` rows and `maxBytes`
 * of their values: the rows come one by one instead of into one array, and past either bound
 * the connection is cut, so the server stops sending (a `generate_series` of billions, a
 * `repeat()` of hundreds of megabytes) instead of the platform holding it all. The client is
 * unusable afterwards: the caller ends it either way.
 */
export function boundedQuery(client: pg.Client, text: string, bounds: { maxRows: number; maxBytes: number }): Promise<BoundedResult> {
  return new Promise((resolve, reject) => {
    const config: pg.QueryArrayConfig = { text, rowMode: 'array' };
    const query = new pg.Query<unknown[]>(config);
    let current: unknown = null;
    let rows: Array<Array<string | null>> = [];
    let bytes = 0;
    let truncated = false;
    let last: Partial<pg.QueryResult> = {};
    const answer = () =>
      resolve({
        command: last.command ?? '',
        rowCount: truncated ? null : (last.rowCount ?? null),
        columns: (last.fields ?? []).map((f) => f.name),
        rows,
        truncated,
      });
    query.on('row', (row, result) => {
      if (truncated || !result) return;
      if (result !== current) {
        // Another statement of the text: only the last one's rows are answered.
        current = result;
        rows = [];
        bytes = 0;
      }
      last = result;
      const values = row.map(asText);
      bytes += values.reduce((n, v) => n + (v?.length ?? 0), 0);
      if (rows.length >= bounds.maxRows || bytes > bounds.maxBytes) {
        truncated = true;
        // Cutting the connection is what stops the server: nothing more is parsed or kept.
        (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
        return answer();
      }
      rows.push(values);
    });
    // A text of several statements ends with the array of their results.
    query.on('end', (results: pg.QueryResult | pg.QueryResult[]) => {
      last = Array.isArray(results) ? results[results.length - 1]! : results;
      if (last !== current) rows = []; // the last statement returned no rows
      answer();
    });
    query.on('error', (err) => (truncated ? undefined : reject(err)));
    client.query(query);
  });
}
