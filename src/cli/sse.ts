import { EventSourceParserStream, type EventSourceMessage } from 'eventsource-parser/stream';
import { apiError, fetchOrExplain, USER_AGENT, type Paths } from './api.js';
import type { ResolvedSettings } from './settings.js';

/** The route is not served by this server (an older Slipway): callers fall back to polling. */
export class StreamUnavailable extends Error {}

/** Event-stream routes of the API document (their content type is text/event-stream). */
type StreamRoute = { [P in keyof Paths]: P extends `${string}/stream` ? P : never }[keyof Paths];

/**
 * The URL path of a stream route with its parameters filled in: the route is named from the
 * generated types, so a renamed stream route fails the typecheck too.
 */
export function streamPath(route: StreamRoute, params: Record<string, string>, query: Record<string, string | undefined> = {}): string {
  const path = route.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`streamPath: no value for {${name}} in ${route}`);
    return encodeURIComponent(value);
  });
  const search = new URLSearchParams(Object.entries(query).filter((e): e is [string, string] => e[1] !== undefined)).toString();
  return search ? `${path}?${search}` : path;
}

export interface StreamOptions {
  signal?: AbortSignal;
  /** Reconnections allowed after the connection drops without an `end` (each resumes with Last-Event-ID). */
  retries?: number;
}

/**
 * Server-sent events of an API route, as a `for await` sequence. A dropped connection is
 * resumed where it stopped (Last-Event-ID), so a CI job following a long deploy through a
 * flaky proxy sees every line once. The sequence ends when the server closes after `end`.
 */
export async function* serverEvents(
  settings: ResolvedSettings,
  path: string,
  options: StreamOptions = {},
): AsyncGenerator<EventSourceMessage> {
  let lastEventId: string | undefined;
  let retriesLeft = options.retries ?? 5;
  for (;;) {
    const headers: Record<string, string> = { accept: 'text/event-stream', 'user-agent': USER_AGENT };
    if (settings.apiKey) headers['x-api-key'] = settings.apiKey;
    if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
    let response: Response;
    try {
      response = await fetchOrExplain(settings.server, `${settings.server}${path}`, { headers, signal: options.signal });
    } catch (err) {
      if (options.signal?.aborted) return; // stopped (Ctrl-C) while connecting
      throw err;
    }
    if (!response.ok) {
      const body = await response.json().catch(() => ({}));
      if (response.status === 404 && /^Route /.test(String((body as { message?: string }).message))) throw new StreamUnavailable(path);
      throw apiError(response.status, body);
    }
    let ended = false;
    try {
      const events = response
        .body!.pipeThrough(new TextDecoderStream())
        .pipeThrough(boundedLines(MAX_EVENT_LINE_CHARS))
        .pipeThrough(new EventSourceParserStream());
      for await (const event of events as unknown as AsyncIterable<EventSourceMessage>) {
        if (event.id !== undefined) lastEventId = event.id;
        if (event.event === 'end') ended = true;
        yield event;
      }
    } catch (err) {
      if (options.signal?.aborted) return;
      if (retriesLeft <= 0) throw err;
    }
    if (ended || options.signal?.aborted) return;
    if (retriesLeft-- <= 0) throw new Error(`The event stream ${path} closed before its end`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** The server cuts log lines at 16 KiB; a longer line means a broken stream, not something to buffer. */
const MAX_EVENT_LINE_CHARS = 1024 * 1024;

/** Passes text through, failing the stream when a line grows past `maxChars` (the parser would buffer it whole). */
function boundedLines(maxChars: number): TransformStream<string, string> {
  let sinceNewline = 0;
  return new TransformStream({
    transform(chunk, controller) {
      const nl = chunk.lastIndexOf('\n');
      sinceNewline = nl < 0 ? sinceNewline + chunk.length : chunk.length - nl - 1;
      if (sinceNewline > maxChars) controller.error(new Error(`the event stream sent a line longer than ${maxChars} characters`));
      else controller.enqueue(chunk);
    },
  });
}
