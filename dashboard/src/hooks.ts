import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { errorText } from './api.js';

export interface Loaded<T> {
  data: T | undefined;
  error: string | null;
  loading: boolean;
  reload: () => void;
}

/** Loads with `load` whenever `deps` change; `reload()` fetches again and keeps showing the old data meanwhile. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let current = true;
    setLoading(true);
    load()
      .then((value) => current && (setData(value), setError(null)))
      .catch((e: unknown) => current && setError(errorText(e)))
      .finally(() => current && setLoading(false));
    return () => {
      current = false;
    };
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data, error, loading, reload };
}

/**
 * Follows a server-sent event stream while mounted (EventSource reconnects with Last-Event-ID by
 * itself). `handlers` maps event names to callbacks; the latest handlers are always used.
 */
export function useEventStream(url: string | null, handlers: Record<string, (data: unknown) => void>): boolean {
  const latest = useRef(handlers);
  latest.current = handlers;
  const [open, setOpen] = useState(false);
  const names = Object.keys(handlers).sort().join(',');
  useEffect(() => {
    if (!url) return;
    const source = new EventSource(url, { withCredentials: true });
    source.onopen = () => setOpen(true);
    source.onerror = () => setOpen(source.readyState === EventSource.OPEN);
    for (const name of names.split(',')) {
      source.addEventListener(name, (event) => {
        latest.current[name]?.(JSON.parse((event as MessageEvent<string>).data));
        // A finished log stream ends with `end`: stop, instead of reconnecting to replay it.
        if (name === 'end') source.close();
      });
    }
    return () => {
      source.close();
      setOpen(false);
    };
  }, [url, names]);
  return open;
}
