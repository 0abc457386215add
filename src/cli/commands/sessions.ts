import type { Command } from 'commander';
import { ok } from '../api.js';
import { Context } from '../context.js';
import { usage } from '../errors.js';
import { when } from '../output.js';

/**
 * `slipway sessions`: where you are signed in (browser sessions by password or single sign-on,
 * and CLIs signed in through the browser), and ending them. Site administrators pass --user.
 */
export function sessionCommands(program: Command) {
  const sessions = program.command('sessions').description('Your sign-ins (browsers and CLIs): list and end them');

  /** A user's id from --user (a site administrator's: an id, username or e-mail). */
  const userId = async (ctx: Context, user: string) => {
    if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(user)) return user;
    const users = await ok(ctx.api.GET('/v1/users'));
    const found = users.find((u) => u.username.toLowerCase() === user.toLowerCase() || u.email.toLowerCase() === user.toLowerCase());
    if (!found) throw usage(`--user: no user '${user}'`);
    return found.id;
  };

  sessions
    .command('list')
    .description('Open sign-ins: how (password, oidc, cli-browser), when, from where, with what')
    .option('--user <user>', "a user's sign-ins (site administrators): id, username or e-mail")
    .action(async (opts: { user?: string }, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      const list = opts.user
        ? await ok(ctx.api.GET('/v1/users/{user_id}/sessions', { params: { path: { user_id: await userId(ctx, opts.user) } } }))
        : await ok(ctx.api.GET('/v1/users/me/sessions'));
      ctx.out.table(
        list,
        [
          { header: 'ID', value: (s) => `${s.id}${s.current ? ' (this one)' : ''}` },
          { header: 'METHOD', value: (s) => s.method },
          { header: 'CREATED', value: (s) => when(s.created) },
          { header: 'LAST USED', value: (s) => when(s.last_used) },
          { header: 'ADDRESS', value: (s) => s.address ?? '-' },
          { header: 'CLIENT', value: (s) => s.user_agent ?? '-' },
          { header: 'ENDS', value: (s) => when(s.expires) },
        ],
        'no open sign-ins',
      );
    });

  sessions
    .command('revoke')
    .description('End a sign-in (its next request is refused), or all but this one')
    .argument('[id]', 'the sign-in to end (from `slipway sessions list`)')
    .option('--all-others', 'end every sign-in but the one this command uses')
    .option('--user <user>', "with --all-others: end all of a user's sign-ins (site administrators)")
    .action(async (id: string | undefined, opts: { allOthers?: boolean; user?: string }, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      if (Boolean(id) === Boolean(opts.allOthers)) throw usage('Name one sign-in to end, or pass --all-others');
      if (opts.user && !opts.allOthers) throw usage('--user goes with --all-others');
      if (id) {
        await ok(ctx.api.DELETE('/v1/users/me/sessions/{session_id}', { params: { path: { session_id: id } } }));
        ctx.out.result({ revoked: 1, id }, () => `Ended sign-in ${id}`);
        return;
      }
      const done = opts.user
        ? await ok(ctx.api.DELETE('/v1/users/{user_id}/sessions', { params: { path: { user_id: await userId(ctx, opts.user) } } }))
        : await ok(ctx.api.DELETE('/v1/users/me/sessions'));
      ctx.out.result({ revoked: done.revoked }, () => `Ended ${done.revoked} sign-in${done.revoked === 1 ? '' : 's'}`);
    });
}
