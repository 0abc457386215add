import { ok } from './api.js';
import type { Context } from './context.js';
import { terminalSafe } from './output.js';
import { serverEvents, streamPath, StreamUnavailable } from './sse.js';

export type LogKind = 'build' | 'release' | 'deployment';

export interface PhaseOutcome {
  status: string;
  error_detail: string | null;
}

const POLL_MS = 1000;
const FINISHED = new Set(['built', 'complete', 'error', 'succeeded', 'failed', 'timed_out']);

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Prints a build, release or deployment log as it is written and returns how it ended.
 * Live over server-sent events where the server streams that log, else by polling the
 * log endpoint and printing what is new. Lines reach `print` without control characters.
 */
export async function followLog(ctx: Context, kind: LogKind, id: string, printRaw: (line: string) => void): Promise<PhaseOutcome> {
  const print = (line: string) => printRaw(terminalSafe(line));
  const stream =
    kind === 'build'
      ? streamPath('/v1/images/{image_id}/log/stream', { image_id: id })
      : kind === 'deployment'
        ? streamPath('/v1/deployments/{deployment_id}/log/stream', { deployment_id: id })
        : null;
  if (stream) {
    try {
      let outcome: PhaseOutcome = { status: 'error', error_detail: 'the log stream ended without a status' };
      for await (const event of serverEvents(ctx.settings, stream)) {
        if (event.event === 'line') print((JSON.parse(event.data) as { line: string }).line);
        else if (event.event === 'end') outcome = JSON.parse(event.data) as PhaseOutcome;
      }
      return outcome;
    } catch (err) {
      if (!(err instanceof StreamUnavailable)) throw err;
    }
  }
  return pollLog(ctx, kind, id, print);
}

/** The log endpoint read every second; only whole new lines are printed. */
async function pollLog(ctx: Context, kind: LogKind, id: string, print: (line: string) => void): Promise<PhaseOutcome> {
  let printed = 0;
  for (;;) {
    const log = await readLog(ctx, kind, id);
    const done = FINISHED.has(log.status);
    const text = log.log_text;
    const end = done ? text.length : text.lastIndexOf('\n') + 1;
    if (end > printed) {
      for (const line of text.slice(printed, end).replace(/\n$/, '').split('\n')) print(line);
      printed = end;
    }
    if (done) return { status: log.status, error_detail: log.error_detail };
    await sleep(POLL_MS);
  }
}

export async function readLog(ctx: Context, kind: LogKind, id: string) {
  if (kind === 'build') return ok(ctx.api.GET('/v1/images/{image_id}/log', { params: { path: { image_id: id } } }));
  if (kind === 'release') return ok(ctx.api.GET('/v1/releases/{release_id}/log', { params: { path: { release_id: id } } }));
  return ok(ctx.api.GET('/v1/deployments/{deployment_id}/log', { params: { path: { deployment_id: id } } }));
}
