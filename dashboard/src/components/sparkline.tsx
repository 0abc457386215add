/**
 * A small line of requests per bucket with the 5xx answers over it in the error colour; its
 * accessible name says the totals, so nothing depends on seeing the line.
 */
export function Sparkline({ requests, errors, label }: { requests: number[]; errors: number[]; label: string }) {
  const width = 120;
  const height = 28;
  const top = Math.max(1, ...requests);
  const points = (values: number[]) =>
    values
      .map((v, i) => `${((i / Math.max(1, values.length - 1)) * width).toFixed(1)},${(height - 2 - (v / top) * (height - 4)).toFixed(1)}`)
      .join(' ');
  const total = requests.reduce((s, n) => s + n, 0);
  const failed = errors.reduce((s, n) => s + n, 0);
  const text = total === 0 ? `${label}: no requests` : `${label}: ${total} requests, ${failed} failed (5xx)`;
  return (
    <svg class="sparkline" viewBox={`0 0 ${width} ${height}`} width={width} height={height} role="img" aria-label={text}>
      <title>{text}</title>
      <polyline class="spark-requests" points={points(requests)} fill="none" />
      {failed > 0 && <polyline class="spark-errors" points={points(errors)} fill="none" />}
    </svg>
  );
}
