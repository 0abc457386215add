import type { Command } from 'commander';
import { ok, type Paths } from '../api.js';
import { Context } from '../context.js';
import { usage } from '../errors.js';
import { when } from '../output.js';

type CreateBody = NonNullable<Paths['/v1/organizations/{org_slug}/log-drains']['post']['requestBody']>['content']['application/json'];

const KINDS = ['syslog', 'https', 'otlp'] as const;

/** `slipway drains …`: an organization's log drains (issue 33). */
export function drainCommands(program: Command) {
  // The organization: --org, else the one of the linked application.
  const orgOf = (ctx: Context, o: { org?: string }) => {
    ctx.requireKey();
    return o.org ?? ctx.appName().split('/')[0]!;
  };
  const path = (org: string) => ({ params: { path: { org_slug: org } } });

  const drains = program.command('drains').description("The organization's log drains: syslog, HTTPS JSON lines, OTLP (admins)");
  drains
    .command('list', { isDefault: true })
    .description('Drains, with lines sent and dropped and the last error')
    .option('--org <slug>', 'organization (default: the linked application’s)')
    .action(async (o: { org?: string }, command: Command) => {
      const ctx = Context.of(command);
      const list = await ok(ctx.api.GET('/v1/organizations/{org_slug}/log-drains', path(orgOf(ctx, o))));
      ctx.out.table(
        list,
        [
          { header: 'ID', value: (d) => d.id },
          { header: 'KIND', value: (d) => d.kind },
          { header: 'URL', value: (d) => d.url },
          { header: 'APP', value: (d) => d.application ?? 'all' },
          { header: 'SOURCES', value: (d) => d.sources.join(',') },
          { header: 'SENT', value: (d) => String(d.lines_sent) },
          { header: 'DROPPED', value: (d) => String(d.lines_dropped) },
          { header: 'LAST ERROR', value: (d) => (d.last_error ? `${d.last_error} (${when(d.last_error_at!)})` : '') },
        ],
        'no drains: `slipway drains add syslog syslog+tls://logs.example.com:6514`',
      );
    });
  drains
    .command('add')
    .description('Ship runtime, build and deploy logs to a syslog server, an HTTPS endpoint (JSON lines) or an OTLP/HTTP collector')
    .argument('<kind>', KINDS.join(' | '))
    .argument('<url>', 'syslog+tcp://host:port, syslog+tls://host:port, https://… or https://collector:4318/v1/logs')
    .option('--application <project/app>', 'only this application’s logs (default: every application)')
    .option('--sources <list>', 'comma-separated: runtime,build,deploy (default: all)')
    .option('--ca-file <pem>', 'syslog+tls: the certificate(s) that may sign the server’s')
    .option('--token <token>', 'otlp: sent as Authorization: Bearer')
    .option('--name <label>', 'a label for the drain')
    .option('--org <slug>', 'organization (default: the linked application’s)')
    .action(
      async (
        kind: string,
        url: string,
        o: { application?: string; sources?: string; caFile?: string; token?: string; name?: string; org?: string },
        command: Command,
      ) => {
        if (!(KINDS as readonly string[]).includes(kind)) throw usage(`Unknown kind '${kind}': ${KINDS.join(', ')}`);
        const ctx = Context.of(command);
        const { readFile } = await import('node:fs/promises');
        const body: CreateBody = {
          kind: kind as CreateBody['kind'],
          url,
          ...(o.application ? { application: o.application } : {}),
          ...(o.sources ? { sources: o.sources.split(',').map((s) => s.trim()) as CreateBody['sources'] } : {}),
          ...(o.caFile ? { ca: await readFile(o.caFile, 'utf8') } : {}),
          ...(o.token ? { token: o.token } : {}),
          ...(o.name ? { name: o.name } : {}),
        };
        const drain = await ok(ctx.api.POST('/v1/organizations/{org_slug}/log-drains', { ...path(orgOf(ctx, o)), body }));
        ctx.out.result(
          drain,
          () =>
            `Added ${drain.kind} drain ${drain.id} (${drain.url})` +
            (drain.secret ? `\nEvery request carries X-Slipway-Drain-Secret: ${drain.secret} (shown only now)` : ''),
        );
      },
    );
  drains
    .command('remove')
    .alias('rm')
    .description('Delete a drain')
    .argument('<id>')
    .option('--org <slug>', 'organization (default: the linked application’s)')
    .action(async (id: string, o: { org?: string }, command: Command) => {
      const ctx = Context.of(command);
      const r = await ok(
        ctx.api.DELETE('/v1/organizations/{org_slug}/log-drains/{drain_id}', {
          params: { path: { org_slug: orgOf(ctx, o), drain_id: id } },
        }),
      );
      ctx.out.result(r, () => `Removed ${id}`);
    });
}
