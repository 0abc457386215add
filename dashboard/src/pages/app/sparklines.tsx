import { api, ok } from '../../api.js';
import { useLoad } from '../../hooks.js';

const WIDTH = 120;
const HEIGHT = 28;

/** A tiny inline line chart; its accessible name says what it shows in words (total and peak). */
export function Sparkline({ values, label, tone }: { values: number[]; label: string; tone: 'ok' | 'bad' }) {
  const peak = Math.max(1, ...values);
  const step = values.length > 1 ? WIDTH / (values.length - 1) : WIDTH;
  const points = values.map((v, n) => `${(n * step).toFixed(1)},${(HEIGHT - 2 - (v / peak) * (HEIGHT - 4)).toFixed(1)}`).join(' ');
  return (
    <svg
      class={`sparkline sparkline-${tone}`}
      width={WIDTH}
      height={HEIGHT}
      viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
      role="img"
      aria-label={label}
    >
      <polyline points={points} fill="none" stroke="currentColor" stroke-width="1.5" stroke-linejoin="round" />
    </svg>
  );
}

const MINUTES = 60;

/** Per-minute totals over the last hour (minutes without traffic are zeros, so the line keeps its time axis). */
export function perMinute(rows: { minute: string; environment: string; requests: number; status: Record<string, number> }[], now: number) {
  const start = Math.floor(now / 60_000) - MINUTES + 1;
  const requests = new Array<number>(MINUTES).fill(0);
  const errors = new Array<number>(MINUTES).fill(0);
  for (const row of rows) {
    if (row.environment !== 'production') continue;
    const n = Math.floor(Date.parse(row.minute) / 60_000) - start;
    if (n < 0 || n >= MINUTES) continue;
    requests[n]! += row.requests;
    errors[n]! += row.status['5xx'] ?? 0;
  }
  return { requests, errors };
}

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

/** Production's requests and server errors over the last hour, from the edge's per-minute counts (one request). */
export function RequestSparklines({ applicationId, refresh }: { applicationId: string; refresh: number }) {
  const rows = useLoad(
    () =>
      ok(
        api.GET('/v1/applications/{application_id}/observability/requests', {
          params: { path: { application_id: applicationId }, query: { minutes: MINUTES } },
        }),
      ),
    [applicationId, refresh],
  );
  if (rows.data === undefined) return null;
  const { requests, errors } = perMinute(rows.data, Date.now());
  const total = sum(requests);
  const failed = sum(errors);
  return (
    <div class="sparklines" data-testid="sparklines">
      <p>
        <span class="muted">Requests, last hour</span> <strong data-testid="requests-total">{total}</strong>{' '}
        <Sparkline
          values={requests}
          tone="ok"
          label={`Requests per minute over the last hour: ${total} in all, at most ${Math.max(...requests)} a minute`}
        />
      </p>
      <p>
        <span class="muted">Server errors (5xx)</span>{' '}
        <strong data-testid="errors-total">
          {failed}
          {total > 0 ? ` (${((failed / total) * 100).toFixed(1)}%)` : ''}
        </strong>{' '}
        <Sparkline
          values={errors}
          tone={failed > 0 ? 'bad' : 'ok'}
          label={`Server errors per minute over the last hour: ${failed} in all, at most ${Math.max(...errors)} a minute`}
        />
      </p>
    </div>
  );
}
