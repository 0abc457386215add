import { useEffect, useRef, useState } from 'preact/hooks';
import { useEventStream } from '../hooks.js';

interface Line {
  line: string;
}
interface End {
  status: string;
  error_detail: string | null;
  /** A one-off run's exit status (other logs' ends have none). */
  exit_code?: number | null;
}

/** A record's log followed live over its event stream until the stream's `end` event. */
export function LogView({ url, title }: { url: string; title: string }) {
  const [lines, setLines] = useState<string[]>([]);
  const [end, setEnd] = useState<End | null>(null);
  const bottom = useRef<HTMLPreElement>(null);
  useEffect(() => {
    setLines([]);
    setEnd(null);
  }, [url]);
  const open = useEventStream(url, {
    line: (data) => setLines((all) => [...all, (data as Line).line]),
    end: (data) => setEnd(data as End),
  });
  useEffect(() => {
    const pre = bottom.current;
    if (pre) pre.scrollTop = pre.scrollHeight;
  }, [lines.length]);
  return (
    <section class="log" aria-label={title}>
      <h3>
        {title}{' '}
        <span class="muted log-state" data-state={end ? end.status : open ? 'live' : 'connecting'}>
          {end
            ? `finished: ${end.status}${end.exit_code === undefined || end.exit_code === null ? '' : `, exit ${end.exit_code}`}`
            : open
              ? '● live'
              : 'connecting…'}
        </span>
      </h3>
      {end?.error_detail && (
        <p class="error" role="alert">
          {end.error_detail}
        </p>
      )}
      <pre ref={bottom} tabIndex={0} class="log-lines">
        {lines.length === 0 ? <span class="muted">No output yet.</span> : lines.join('\n')}
      </pre>
    </section>
  );
}
