import { hostname } from 'node:os';
import { input, password as passwordPrompt } from '@inquirer/prompts';
import type { Command } from 'commander';
import { createApi, ok } from '../api.js';
import { Context } from '../context.js';
import { ApiError, CliError, EXIT, usage } from '../errors.js';
import { when } from '../output.js';
import { readSettings, updateSettings } from '../settings.js';
import { readStdin } from '../stdin.js';
import { browserLogin } from './browser-login.js';

export function authCommands(program: Command) {
  program
    .command('login')
    .description('Log in: e-mail and password (prompted, hidden) create an API key that is stored; the password is not')
    .option('--email <email>', 'e-mail (prompted when absent)')
    .option('--password-stdin', 'read the password from standard input (CI)')
    .option('--with-api-key', 'store the key given with --api-key or SLIPWAY_API_KEY instead of logging in with a password')
    .option('--browser', 'approve the login in the dashboard (opens the browser; the key reaches this CLI on 127.0.0.1)')
    .option('--no-open', 'with --browser: print the page to open instead of opening it')
    .addHelpText(
      'after',
      '\nExamples:\n  slipway login\n  slipway login --email me@example.com --password-stdin < password.txt\n  slipway login --api-key "$SLIPWAY_API_KEY"',
    )
    .action(
      async (
        opts: { email?: string; passwordStdin?: boolean; withApiKey?: boolean; browser?: boolean; open: boolean },
        command: Command,
      ) => {
        const ctx = Context.of(command);
        const { server } = ctx.settings;
        if (opts.browser) return browserLogin(ctx, { open: opts.open });
        if (ctx.options.apiKey || opts.withApiKey) {
          const key = ctx.settings.apiKey;
          if (!key) throw usage('--with-api-key needs --api-key or SLIPWAY_API_KEY');
          const session = await ok(createApi(server, key).GET('/v1/auth/session'));
          if (!session.user) throw new ApiError(401, 'That API key is not valid');
          updateSettings((s) => {
            s.server = server;
            s.api_key = key;
            delete s.api_key_id;
          }, ctx.settingsFile);
          return ctx.out.result(
            { server, user: session.user },
            () => `Logged in to ${server} as ${session.user!.username} (API key stored in ${ctx.settingsFile})`,
          );
        }
        const email = opts.email ?? (await prompt(() => input({ message: 'E-mail:' }), '--email'));
        const password = opts.passwordStdin
          ? (await readStdin()).replace(/\r?\n$/, '')
          : await prompt(() => passwordPrompt({ message: 'Password:', mask: '*' }), '--password-stdin');
        const anonymous = createApi(server, undefined);
        const login = await anonymous.POST('/v1/auth/login', { body: { email, password } });
        if (!login.response.ok) throw apiLoginError(login.response.status, login.error);
        // The session cookie is only used to create the key the CLI keeps; it is then logged out.
        const cookie = (login.response.headers.getSetCookie?.() ?? []).map((c) => c.split(';')[0]).join('; ');
        const key = await ok(anonymous.POST('/v1/auth/api-keys', { body: { name: `slipway CLI on ${hostname()}` }, headers: { cookie } }));
        await anonymous.POST('/v1/auth/logout', { headers: { cookie } }).catch(() => undefined);
        updateSettings((s) => {
          s.server = server;
          s.api_key = key.key;
          s.api_key_id = key.id;
        }, ctx.settingsFile);
        ctx.out.result(
          { server, user: login.data!.user, api_key: { id: key.id, name: key.name, prefix: key.prefix } },
          () =>
            `Logged in to ${server} as ${login.data!.user!.username}; created API key ${key.prefix}… (“${key.name}”), stored in ${ctx.settingsFile}`,
        );
      },
    );

  program
    .command('logout')
    .description('Revoke the API key `login` created and forget it')
    .action(async (_opts, command: Command) => {
      const ctx = Context.of(command);
      let revoked = false;
      const stored = readSettings(ctx.settingsFile);
      if (stored.api_key && stored.api_key_id) {
        const res = await createApi(ctx.settings.server, stored.api_key)
          .DELETE('/v1/auth/api-keys/{id}', { params: { path: { id: stored.api_key_id } } })
          .catch(() => null);
        revoked = Boolean(res?.response.ok);
      }
      updateSettings((s) => {
        delete s.api_key;
        delete s.api_key_id;
      }, ctx.settingsFile);
      ctx.out.result({ logged_out: true, key_revoked: revoked }, () => `Logged out${revoked ? ' (API key revoked)' : ''}`);
    });

  program
    .command('whoami')
    .description('The user the API key belongs to')
    .action(async (_opts, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      const session = await ok(ctx.api.GET('/v1/auth/session'));
      // The session route answers 200 unauthenticated: a rejected key reads like any other 401.
      if (!session.user) throw new ApiError(401, 'Not authenticated');
      const user = session.user;
      ctx.out.result(
        { server: ctx.settings.server, ...user },
        () => `${user.username} <${user.email}>${user.is_admin ? ' (site admin)' : ''} on ${ctx.settings.server}`,
      );
    });

  const keys = program.command('api-keys').description('Your API keys');
  keys
    .command('list')
    .description('List your API keys')
    .action(async (_opts, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      const list = await ok(ctx.api.GET('/v1/auth/api-keys'));
      ctx.out.table(
        list,
        [
          { header: 'ID', value: (k) => k.id },
          { header: 'NAME', value: (k) => k.name },
          { header: 'PREFIX', value: (k) => k.prefix },
          { header: 'CREATED', value: (k) => when(k.created) },
          { header: 'LAST USED', value: (k) => when(k.last_used) },
          { header: 'EXPIRES', value: (k) => when(k.expires) },
        ],
        'no API keys',
      );
    });
  keys
    .command('create')
    .description('Create an API key (printed once)')
    .argument('<name>')
    .option('--expires-in-days <days>', 'expiry', (v) => positiveInt(v, '--expires-in-days'))
    .action(async (name: string, opts: { expiresInDays?: number }, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      const key = await ok(
        ctx.api.POST('/v1/auth/api-keys', { body: { name, ...(opts.expiresInDays ? { expires_in_days: opts.expiresInDays } : {}) } }),
      );
      ctx.out.result(key, () => [key.key, ctx.out.colors.dim(`API key “${key.name}” (${key.id}): shown once, keep it somewhere safe`)]);
    });
  keys
    .command('delete')
    .alias('revoke')
    .description('Revoke an API key')
    .argument('<id>')
    .action(async (id: string, _opts, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      await ok(ctx.api.DELETE('/v1/auth/api-keys/{id}', { params: { path: { id } } }));
      ctx.out.result({ deleted: id }, () => `Revoked API key ${id}`);
    });
}

/** Prompts only on a terminal: a script gets a usage error naming the flag instead of a hang. */
async function prompt<T>(ask: () => Promise<T>, flag: string): Promise<T> {
  if (!process.stdin.isTTY) throw usage(`Not a terminal: pass ${flag}`);
  return ask();
}

function apiLoginError(status: number, body: unknown) {
  const message = (body as { message?: string } | undefined)?.message ?? `HTTP ${status}`;
  return new CliError(`Login failed: ${message}`, status === 401 || status === 403 ? EXIT.auth : EXIT.failure);
}

export function positiveInt(value: string, name: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw usage(`${name} must be a positive integer`);
  return n;
}
