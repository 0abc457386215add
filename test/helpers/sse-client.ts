/** One Server-Sent Event as a client sees it. */
export interface ReceivedEvent {
  id: string | null;
  event: string;
  data: any;
}

export interface SseClient {
  /** Events so far, in order. */
  events: ReceivedEvent[];
  /** Comment lines so far (`: ping`). */
  comments: string[];
  /** Resolves when the server ends the response. */
  ended: Promise<void>;
  /** Waits until an event matches (or the stream ends: then throws). */
  until(match: (e: ReceivedEvent) => boolean, what?: string): Promise<ReceivedEvent>;
  /** Drops the connection (as a client going away would). */
  close(): void;
  status: number;
}

/** A minimal SSE client over fetch (Node 20): parses `id`, `event`, `data` and comments. */
export async function openSse(url: string, headers: Record<string, string>, lastEventId?: string): Promise<SseClient> {
  const controller = new AbortController();
  const res = await fetch(url, {
    headers: { accept: 'text/event-stream', ...headers, ...(lastEventId ? { 'last-event-id': lastEventId } : {}) },
    signal: controller.signal,
  });
  const events: ReceivedEvent[] = [];
  const comments: string[] = [];
  const waiters = new Set<() => void>();
  const notify = () => {
    for (const w of [...waiters]) w();
  };
  let done = false;
  const ended = (async () => {
    if (!res.body) return;
    const decoder = new TextDecoder();
    let buffer = '';
    let current: { id: string | null; event: string; data: string[] } = { id: null, event: 'message', data: [] };
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let nl: number;
        while ((nl = buffer.indexOf('\n')) >= 0) {
          const line = buffer.slice(0, nl);
          buffer = buffer.slice(nl + 1);
          if (line === '') {
            if (current.data.length > 0) {
              const text = current.data.join('\n');
              let data: unknown = text;
              try {
                data = JSON.parse(text);
              } catch {
                /* plain text */
              }
              events.push({ id: current.id, event: current.event, data });
              notify();
            }
            current = { id: null, event: 'message', data: [] };
          } else if (line.startsWith(':')) {
            comments.push(line);
          } else {
            const colon = line.indexOf(':');
            const field = colon < 0 ? line : line.slice(0, colon);
            const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
            if (field === 'id') current.id = value;
            else if (field === 'event') current.event = value;
            else if (field === 'data') current.data.push(value);
          }
        }
      }
    } catch {
      /* aborted by close() */
    }
    done = true;
    notify();
  })();
  return {
    events,
    comments,
    ended,
    status: res.status,
    close: () => controller.abort(),
    until(match, what = 'an event') {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = events.find(match);
          if (found) {
            waiters.delete(check);
            resolve(found);
          } else if (done) {
            waiters.delete(check);
            reject(new Error(`the stream ended before ${what}`));
          }
        };
        waiters.add(check);
        check();
      });
    },
  };
}
