import { jsonText, terminalSafe } from '../output.js';
import type { Command } from 'commander';
import { ok } from '../api.js';
import { Context } from '../context.js';
import { usage } from '../errors.js';
import { serverEvents, streamPath } from '../sse.js';
import { positiveInt } from './auth.js';
import { runCommand } from './run.js';

import type { Paths } from '../api.js';

type LogEntry = Paths['/v1/applications/{application_id}/logs']['get']['responses']['200']['content']['application/json']['items'][number];

export function runtimeCommands(program: Command) {
  program
    .command('logs')
    .description("The application's output (every instance), optionally followed live")
    .option('-f, --follow', 'keep printing new lines (Ctrl-C to stop)')
    .option('-p, --process <type>', 'only this process type (web, worker, …)')
    .option('--since <when>', 'from this long ago (30s, 10m, 2h, 1d) or an ISO time')
    .option('--search <text>', 'only lines containing this text')
    .option('-n, --limit <n>', 'at most this many earlier lines', (v) => positiveInt(v, '--limit'))
    .action(async (o: { follow?: boolean; process?: string; since?: string; search?: string; limit?: number }, command: Command) => {
      const ctx = Context.of(command);
      const app = await ctx.app();
      const query = {
        ...(o.process ? { process: o.process } : {}),
        ...(o.search ? { search: o.search } : {}),
        ...(ctx.options.env ? { environment: ctx.options.env } : {}),
      };
      const print = (e: LogEntry) => {
        if (ctx.out.json) return ctx.out.stdout.write(`${jsonText(e)}\n`);
        const source = ctx.out.colors.dim(`${e.timestamp.replace(/\.\d+Z$/, 'Z')} ${e.process_type}.${e.instance_id.slice(-6)}`);
        ctx.out.stdout.write(`${source} ${terminalSafe(e.line)}\n`);
      };
      const earlier = await ok(
        ctx.api.GET('/v1/applications/{application_id}/logs', {
          params: {
            path: { application_id: app.id },
            query: { ...query, ...(o.since ? { since: sinceTime(o.since) } : {}), ...(o.limit ? { limit: o.limit } : {}) },
          },
        }),
      );
      const seen = new Set<string>();
      for (const entry of earlier.items) {
        seen.add(entry.id);
        print(entry);
      }
      if (!o.follow) return;
      const controller = new AbortController();
      process.once('SIGINT', () => controller.abort());
      // The stream filters by process; the search is applied here.
      const live = streamPath('/v1/applications/{application_id}/logs/stream', { application_id: app.id }, { process: o.process });
      for await (const event of serverEvents(ctx.settings, live, { signal: controller.signal, retries: Number.POSITIVE_INFINITY })) {
        if (event.event !== 'log') continue;
        const entry = JSON.parse(event.data) as LogEntry;
        if (seen.has(entry.id)) continue;
        if (o.process && entry.process_type !== o.process) continue;
        if (o.search && !entry.line.includes(o.search)) continue;
        print(entry);
      }
    });

  runCommand(program);
}

/** `10m` → ten minutes ago (ISO); an ISO time passes through. */
export function sinceTime(value: string, now = Date.now()): string {
  const m = /^(\d+)\s*(s|m|h|d)$/.exec(value);
  if (m) return new Date(now - Number(m[1]) * { s: 1e3, m: 6e4, h: 36e5, d: 864e5 }[m[2] as 's' | 'm' | 'h' | 'd']).toISOString();
  if (Number.isNaN(Date.parse(value))) throw usage(`--since '${value}' is neither a duration (30s, 10m, 2h, 1d) nor a time`);
  return new Date(value).toISOString();
}
