import type { Command } from 'commander';
import { ok, type Paths } from '../api.js';
import { Context } from '../context.js';
import { usage } from '../errors.js';
import { when } from '../output.js';

type CreateBody = NonNullable<
  Paths['/v1/organizations/{org_slug}/notification-channels']['post']['requestBody']
>['content']['application/json'];

const list = (v: string) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** `slipway notifications …`: an organization's Slack and Discord channels (issue 33). */
export function notificationCommands(program: Command) {
  // The organization: --org, else the one of the linked application.
  const orgOf = (ctx: Context, o: { org?: string }) => {
    ctx.requireKey();
    return o.org ?? ctx.appName().split('/')[0]!;
  };
  const path = (org: string) => ({ params: { path: { org_slug: org } } });
  const channelPath = (org: string, id: string) => ({ params: { path: { org_slug: org, channel_id: id } } });

  const notifications = program
    .command('notifications')
    .alias('notify')
    .description("The organization's Slack, Discord and e-mail notification channels (admins)");
  notifications
    .command('list', { isDefault: true })
    .description('Channels, with the events they get')
    .option('--org <slug>', 'organization (default: the linked application’s)')
    .action(async (o: { org?: string }, command: Command) => {
      const ctx = Context.of(command);
      const channels = await ok(ctx.api.GET('/v1/organizations/{org_slug}/notification-channels', path(orgOf(ctx, o))));
      ctx.out.table(
        channels,
        [
          { header: 'ID', value: (c) => c.id },
          { header: 'KIND', value: (c) => c.kind },
          { header: 'NAME', value: (c) => c.name },
          { header: 'URL', value: (c) => c.url },
          { header: 'EVENTS', value: (c) => c.events.join(',') },
          { header: 'ENVIRONMENTS', value: (c) => c.environments?.join(',') ?? 'all' },
        ],
        'no channels: `slipway notifications add slack <incoming-webhook-url> --events deployment.failed,build.failed`',
      );
    });
  notifications
    .command('add')
    .description('Send chosen events to a Slack or Discord incoming webhook, or by e-mail')
    .argument('<kind>', 'slack | discord | email')
    .argument('<url>', 'the incoming-webhook URL (kept secret by the server); email: mailto:ops@example.com[,other@example.com]')
    .requiredOption('--events <names>', 'comma-separated, e.g. deployment.started,deployment.failed,build.failed,instance.crashed')
    .option('--environments <slugs>', 'comma-separated: only these environments’ events (default: all)')
    .option('--name <label>', 'a label for the channel')
    .option('--org <slug>', 'organization (default: the linked application’s)')
    .action(
      async (kind: string, url: string, o: { events: string; environments?: string; name?: string; org?: string }, command: Command) => {
        if (kind !== 'slack' && kind !== 'discord' && kind !== 'email') throw usage(`Unknown kind '${kind}': slack, discord or email`);
        const ctx = Context.of(command);
        const channel = await ok(
          ctx.api.POST('/v1/organizations/{org_slug}/notification-channels', {
            ...path(orgOf(ctx, o)),
            body: {
              kind: kind as CreateBody['kind'],
              url: kind === 'email' && !url.startsWith('mailto:') ? `mailto:${url}` : url,
              events: list(o.events) as CreateBody['events'], // the server names an unknown event
              ...(o.environments ? { environments: list(o.environments) } : {}),
              ...(o.name ? { name: o.name } : {}),
            },
          }),
        );
        ctx.out.result(
          channel,
          () => `Added ${channel.kind} channel ${channel.id} (${channel.url}); try it: slipway notifications test ${channel.id}`,
        );
      },
    );
  notifications
    .command('remove')
    .alias('rm')
    .description('Delete a channel and its delivery log')
    .argument('<id>')
    .option('--org <slug>', 'organization (default: the linked application’s)')
    .action(async (id: string, o: { org?: string }, command: Command) => {
      const ctx = Context.of(command);
      const r = await ok(ctx.api.DELETE('/v1/organizations/{org_slug}/notification-channels/{channel_id}', channelPath(orgOf(ctx, o), id)));
      ctx.out.result(r, () => `Removed ${id}`);
    });
  notifications
    .command('test')
    .description('Send a test message to a channel')
    .argument('<id>')
    .option('--org <slug>', 'organization (default: the linked application’s)')
    .action(async (id: string, o: { org?: string }, command: Command) => {
      const ctx = Context.of(command);
      const delivery = await ok(
        ctx.api.POST('/v1/organizations/{org_slug}/notification-channels/{channel_id}/test', channelPath(orgOf(ctx, o), id)),
      );
      ctx.out.result(delivery, () => `Test message queued (delivery ${delivery.id}); see \`slipway notifications deliveries ${id}\``);
    });
  notifications
    .command('deliveries')
    .description("A channel's deliveries, newest first, with each attempt's answer")
    .argument('<id>')
    .option('--org <slug>', 'organization (default: the linked application’s)')
    .action(async (id: string, o: { org?: string }, command: Command) => {
      const ctx = Context.of(command);
      const page = await ok(
        ctx.api.GET('/v1/organizations/{org_slug}/notification-channels/{channel_id}/deliveries', channelPath(orgOf(ctx, o), id)),
      );
      ctx.out.table(
        page.items,
        [
          { header: 'ID', value: (d) => d.id },
          { header: 'EVENT', value: (d) => d.event },
          { header: 'STATUS', value: (d) => d.status },
          { header: 'ATTEMPTS', value: (d) => d.attempts.map((a) => a.response_status ?? a.error ?? '?').join(' ') },
          { header: 'CREATED', value: (d) => when(d.created) },
        ],
        'no deliveries yet',
      );
    });
}
