import type { Command } from 'commander';
import { ok } from '../api.js';
import { Context, type GlobalOptions } from '../context.js';
import { usage } from '../errors.js';
import { when } from '../output.js';

const ACTIONS = ['read', 'deploy', 'config:write', 'scale', 'run', 'manage'] as const;
type Action = (typeof ACTIONS)[number];

/** `30d`, `12h`, `90m` (or a bare number of days) from now, as an ISO moment. */
export function expiryFrom(text: string, now = Date.now()): string {
  const match = /^(\d+)([dhm]?)$/.exec(text.trim());
  const amount = match ? Number(match[1]) : NaN;
  if (!match || !Number.isSafeInteger(amount) || amount < 1) throw usage(`--expires '${text}': write a duration such as 30d, 12h or 90m`);
  const unit = { d: 86_400_000, h: 3_600_000, m: 60_000, '': 86_400_000 }[match[2] as 'd' | 'h' | 'm' | ''];
  if (amount * unit > 3650 * 86_400_000) throw usage('--expires: at most 10 years');
  return new Date(now + amount * unit).toISOString();
}

function actionsFrom(text: string): Action[] {
  const list = text
    .split(',')
    .map((a) => a.trim())
    .filter(Boolean);
  const unknown = list.filter((a) => !(ACTIONS as readonly string[]).includes(a));
  if (list.length === 0 || unknown.length > 0) throw usage(`--actions: one or more of ${ACTIONS.join(', ')} (got '${text}')`);
  return list as Action[];
}

/**
 * `slipway keys`: scoped API keys and deploy tokens. A key names the organization, project,
 * application and environment it is limited to (only those given), and its actions; the server
 * checks every use against them and against what its user may still do.
 */
export function keyCommands(program: Command) {
  const keys = program.command('keys').description('Scoped API keys and deploy tokens (limited to an application, environment, actions)');

  keys
    .command('create')
    .description('Create a key (printed once); with --app, --env and --actions deploy it is a deploy token for CI')
    .argument('[name]', 'what the key is for (default: from its limits)')
    .option('--org <org>', 'limit to an organization (implied by --app)')
    .option('--project <org/project>', 'limit to a project (implied by --app)')
    .option('--actions <list>', `comma-separated: ${ACTIONS.join(', ')} (default: all)`)
    .option('--expires <duration>', 'expire after 30d, 12h, 90m… (default: never)')
    .addHelpText(
      'after',
      '\n--app <org/project/app> and --env <env> limit it to an application and an environment.\n\nExamples:\n' +
        '  slipway keys create --app acme/shop/web --env staging --actions deploy --expires 30d   # a deploy token\n' +
        '  slipway keys create "dashboards" --org acme --actions read',
    )
    .action(
      async (name: string | undefined, opts: { org?: string; project?: string; actions?: string; expires?: string }, command: Command) => {
        const ctx = Context.of(command);
        ctx.requireKey();
        const globals = command.optsWithGlobals<GlobalOptions>();
        const limits: { organization?: string; project?: string; application?: string; environment?: string } = {};
        if (globals.app) {
          const [org, project, app, extra] = globals.app.split('/');
          if (!org || !project || !app || extra !== undefined) throw usage(`--app '${globals.app}' must be written org/project/app`);
          Object.assign(limits, { organization: org, project, application: app });
        } else if (opts.project) {
          const [org, project, extra] = opts.project.split('/');
          if (!org || !project || extra !== undefined) throw usage(`--project '${opts.project}' must be written org/project`);
          Object.assign(limits, { organization: org, project });
        } else if (opts.org) limits.organization = opts.org;
        if (globals.env) {
          if (!limits.project) throw usage('--env needs --app or --project (an environment belongs to a project)');
          limits.environment = globals.env;
        }
        const actions = opts.actions ? actionsFrom(opts.actions) : undefined;
        const deployToken = Boolean(limits.application && limits.environment && actions?.length === 1 && actions[0] === 'deploy');
        const where = [limits.organization, limits.project, limits.application].filter(Boolean).join('/');
        const label =
          name ??
          `${deployToken ? 'deploy token' : 'key'}${where ? ` for ${where}` : ''}${limits.environment ? ` (${limits.environment})` : ''}`;
        const key = await ok(
          ctx.api.POST('/v1/auth/api-keys', {
            body: {
              name: label,
              ...limits,
              ...(actions ? { actions } : {}),
              ...(deployToken ? { kind: 'deploy_token' as const } : {}),
              ...(opts.expires ? { expires_at: expiryFrom(opts.expires) } : {}),
            },
          }),
        );
        ctx.out.result(key, () => [
          key.key,
          ctx.out.colors.dim(
            `${key.kind === 'deploy_token' ? 'Deploy token' : 'API key'} “${key.name}” (${key.id}): shown once, keep it somewhere safe`,
          ),
        ]);
      },
    );

  keys
    .command('list')
    .description('Your keys with their limits, last use and expiry')
    .action(async (_opts, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      const list = await ok(ctx.api.GET('/v1/auth/api-keys'));
      const reach = (k: (typeof list)[number]) => {
        if (!k.scope) return 'everything';
        const s = k.scope;
        const place = [s.organization, s.project, s.application].filter(Boolean).join('/') || 'all organizations';
        return `${place}${s.environment ? ` (${s.environment})` : ''}`;
      };
      ctx.out.table(
        list,
        [
          { header: 'ID', value: (k) => k.id },
          { header: 'NAME', value: (k) => k.name },
          { header: 'KIND', value: (k) => k.kind },
          { header: 'PREFIX', value: (k) => k.prefix },
          { header: 'SCOPE', value: reach },
          { header: 'ACTIONS', value: (k) => k.scope?.actions?.join(',') ?? 'all' },
          { header: 'LAST USED', value: (k) => (k.last_used ? `${when(k.last_used)} from ${k.last_used_address ?? '?'}` : 'never') },
          { header: 'EXPIRES', value: (k) => when(k.expires) },
        ],
        'no API keys',
      );
    });

  keys
    .command('revoke')
    .description('Revoke a key: it stops working at once')
    .argument('<id>')
    .action(async (id: string, _opts, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      await ok(ctx.api.DELETE('/v1/auth/api-keys/{id}', { params: { path: { id } } }));
      ctx.out.result({ revoked: id }, () => `Revoked key ${id}`);
    });
}
