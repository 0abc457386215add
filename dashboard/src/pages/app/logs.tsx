import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ok, type Schemas } from '../../api.js';
import { Loading } from '../../components/ui.js';
import { useEventStream, useLoad } from '../../hooks.js';
import type { SectionProps } from './types.js';

type Line = Schemas['AppLogLine'];

/** Lines kept on screen: older ones drop off so a chatty app cannot grow the page without bound. */
const MAX_LINES = 1000;

/**
 * The application's runtime output: the newest lines of its production log (one request), then
 * every new line as it is written (the API's log stream), optionally one process type only.
 */
export function LogsSection({ app }: SectionProps) {
  const [process, setProcess] = useState('');
  const recent = useLoad(
    () =>
      ok(
        api.GET('/v1/applications/{application_id}/logs', {
          params: { path: { application_id: app.id }, query: { limit: 200, ...(process ? { process } : {}) } },
        }),
      ),
    [app.id, process],
  );
  const [live, setLive] = useState<Line[]>([]);
  useEffect(() => setLive([]), [app.id, process]);
  const query = process ? `?process=${encodeURIComponent(process)}` : '';
  const open = useEventStream(`/v1/applications/${app.id}/logs/stream${query}`, {
    log: (data) => setLive((all) => [...all, data as Line].slice(-MAX_LINES)),
  });
  const box = useRef<HTMLPreElement>(null);
  useEffect(() => {
    if (box.current) box.current.scrollTop = box.current.scrollHeight;
  }, [live.length, recent.data]);
  const types = Object.keys(app.process_counts).sort();
  return (
    <section class="panel log" aria-labelledby="runtime-h">
      <h2 id="runtime-h" data-page-title>
        Runtime logs{' '}
        <span class="muted log-state" data-state={open ? 'live' : 'connecting'}>
          {open ? '● live' : 'connecting…'}
        </span>
      </h2>
      <label class="inline-label">
        Process
        <select value={process} onChange={(e) => setProcess((e.currentTarget as HTMLSelectElement).value)}>
          <option value="">All</option>
          {types.map((t) => (
            <option key={t}>{t}</option>
          ))}
        </select>
      </label>
      <Loading state={recent} what="recent lines">
        {(page) => {
          // The stream may repeat a line the search already returned: keep each id once.
          const seen = new Set(page.items.map((l) => l.id));
          const lines = [...page.items, ...live.filter((l) => !seen.has(l.id))].slice(-MAX_LINES);
          return (
            <pre ref={box} tabIndex={0} class="log-lines runtime-lines" aria-label="Runtime output">
              {lines.length === 0 ? (
                <span class="muted">No output yet: lines appear here as the application writes them.</span>
              ) : (
                lines.map((l) => (
                  <span key={l.id} class={l.stream === 'stderr' ? 'stderr' : undefined}>
                    <span class="muted">
                      {new Date(l.timestamp).toLocaleTimeString()} {l.process_type}
                    </span>{' '}
                    {l.line}
                    {'\n'}
                  </span>
                ))
              )}
            </pre>
          );
        }}
      </Loading>
    </section>
  );
}
