import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { api, ok } from '../api.js';
import { Loading } from '../components/ui.js';
import { useLoad } from '../hooks.js';

const RANGES = ['1h', '6h', '24h', '7d', '30d'] as const;
type Range = (typeof RANGES)[number];

/** The colour scheme in force, followed live: a canvas cannot use CSS variables, so charts redraw with it. */
function useColorScheme(): 'light' | 'dark' {
  const query = window.matchMedia('(prefers-color-scheme: dark)');
  const [dark, setDark] = useState(query.matches);
  useEffect(() => {
    const change = () => setDark(query.matches);
    query.addEventListener('change', change);
    return () => query.removeEventListener('change', change);
  }, []);
  return dark ? 'dark' : 'light';
}

function Chart({ title, times, values, unit }: { title: string; times: number[]; values: number[]; unit: string }) {
  const box = useRef<HTMLDivElement>(null);
  const scheme = useColorScheme();
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    // The design tokens' colours, read from the page: axes and grid legible in light and dark.
    const token = (name: string) => getComputedStyle(el).getPropertyValue(name).trim();
    const axis = { stroke: token('--fg'), grid: { stroke: token('--line') }, ticks: { stroke: token('--line') } };
    const plot = new uPlot(
      {
        width: Math.max(280, Math.min(el.clientWidth, 900)),
        height: 180,
        // One series colour legible on both backgrounds.
        series: [{}, { label: `${title} (${unit})`, stroke: '#4493f8', width: 2 }],
        axes: [axis, axis],
      },
      [times, values],
      el,
    );
    return () => plot.destroy();
  }, [times, values, title, unit, scheme]);
  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      <div ref={box} role="img" aria-label={`${title} chart`} />
    </figure>
  );
}

/** Observability history (CPU, memory, instances, restarts) over a chosen range, and the pipeline metrics. */
export function MetricsPanel({ applicationId }: { applicationId: string }) {
  const [range, setRange] = useState<Range>('1h');
  const path = { application_id: applicationId };
  const history = useLoad(
    () => ok(api.GET('/v1/applications/{application_id}/observability', { params: { path, query: { range } } })),
    [applicationId, range],
  );
  const pipeline = useLoad(() => ok(api.GET('/v1/applications/{application_id}/pipeline-metrics', { params: { path } })), [applicationId]);
  return (
    <>
      <label>
        Range{' '}
        <select value={range} onChange={(e) => setRange((e.currentTarget as HTMLSelectElement).value as Range)}>
          {RANGES.map((r) => (
            <option key={r}>{r}</option>
          ))}
        </select>
      </label>
      <Loading state={history}>
        {(h) => {
          if (h.history.length === 0) return <p class="muted empty">No samples in this range yet.</p>;
          const times = h.history.map((s) => Date.parse(s.timestamp) / 1000);
          return (
            <div class="charts">
              <Chart title="CPU" unit="millicores" times={times} values={h.history.map((s) => s.cpu_usage_m)} />
              <Chart title="Memory" unit="MiB" times={times} values={h.history.map((s) => s.memory_usage_bytes / 2 ** 20)} />
              <Chart title="Instances" unit="count" times={times} values={h.history.map((s) => s.pod_count)} />
              <Chart title="Restarts" unit="count" times={times} values={h.history.map((s) => s.restart_count)} />
            </div>
          );
        }}
      </Loading>
      <h2>Pipeline</h2>
      <Loading state={pipeline}>
        {(m) => (
          <table>
            <thead>
              <tr>
                <th>Stage</th>
                <th>Total</th>
                <th>Success rate</th>
                <th>p50 (s)</th>
                <th>p95 (s)</th>
              </tr>
            </thead>
            <tbody>
              {(['build', 'release', 'deploy'] as const).map((stage) => (
                <tr key={stage}>
                  <td>{stage}</td>
                  <td>{m[stage].total}</td>
                  <td>{m[stage].success_rate === null ? '—' : `${Math.round(m[stage].success_rate * 100)}%`}</td>
                  <td>{m[stage].duration.p50?.toFixed(1) ?? '—'}</td>
                  <td>{m[stage].duration.p95?.toFixed(1) ?? '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Loading>
    </>
  );
}
