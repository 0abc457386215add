/**
 * Background work the edge tolerates failing (a flush of its request counters, a reload of the
 * custom domains) is never silent: each failure is a log line and a count in
 * `slipway_background_failures_total{operation}` of the process's /metrics.
 */
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EdgeDirectory, RequestStats } from '../../src/platform/edge/index.js';
import { createDb } from '../../src/platform/db/database.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

const TOKEN = 'scrape-token-background-failures';

let h: Harness;
beforeAll(async () => {
  h = await createHarness({ METRICS_TOKEN: TOKEN });
}, 60_000);
afterAll(async () => {
  await h?.close();
});

async function failures(operation: string): Promise<number> {
  const r = await h.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } });
  expect(r.statusCode).toBe(200);
  const family = parsePrometheusTextFormat(r.body).find((f) => f.name === 'slipway_background_failures_total');
  return Number(family?.metrics.find((m) => m.labels?.operation === operation)?.value ?? 0);
}

/** A logger that keeps its warnings, as the edge's pino logger would write them. */
function warnings() {
  const lines: Array<{ fields: Record<string, unknown>; message: string }> = [];
  return {
    lines,
    logger: { level: 'info', debug() {}, warn: (fields: object, message: string) => void lines.push({ fields: fields as never, message }) },
  };
}

describe('background failures', () => {
  it('a failed flush of the request counters is logged and counted', async () => {
    // A pool already closed: every write fails, as when the database is unreachable.
    const closed = createDb(h.ctx.databaseUrl!, 1);
    await closed.destroy();
    const before = await failures('request_stats_flush');
    const stats = new RequestStats(closed, 20);
    const log = warnings();
    stats.useLogger(log.logger);
    stats.record(
      'k',
      { applicationId: '00000000-0000-7000-8000-000000000001', environmentId: '00000000-0000-7000-8000-000000000002', processType: 'web' },
      200,
      3,
    );
    stats.start();
    try {
      await waitFor('a failed flush logged', () => log.lines.length > 0);
    } finally {
      await stats.stop();
    }
    expect(log.lines[0]).toMatchObject({ message: 'request stats flush failed', fields: { operation: 'request_stats_flush' } });
    expect(log.lines[0]!.fields.err).toBeInstanceOf(Error);
    expect(await failures('request_stats_flush')).toBeGreaterThan(before);
  });

  it('a failed reload of the custom domains is logged and counted; the last table keeps serving', async () => {
    const db = createDb(h.ctx.databaseUrl!, 1);
    const directory = new EdgeDirectory(db, h.ctx.secrets, 20);
    const log = warnings();
    directory.useLogger(log.logger);
    await directory.start();
    const before = await failures('edge_directory_refresh');
    await db.destroy();
    try {
      await waitFor('a failed refresh logged', () => log.lines.length > 0);
    } finally {
      directory.stop();
    }
    expect(log.lines[0]).toMatchObject({ message: 'edge directory refresh failed', fields: { operation: 'edge_directory_refresh' } });
    expect(await failures('edge_directory_refresh')).toBeGreaterThan(before);
  });
});
