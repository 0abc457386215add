import type { Command } from 'commander';
import { ok } from '../api.js';
import { Context } from '../context.js';
import { ApiError, usage } from '../errors.js';
import { when } from '../output.js';

const ROLES = ['owner', 'admin', 'deployer', 'developer', 'viewer'] as const;
type Role = (typeof ROLES)[number];

function roleFrom(text: string): Role {
  const role = text.trim().toLowerCase();
  if (!(ROLES as readonly string[]).includes(role)) throw usage(`Role '${text}': one of ${ROLES.join(', ')} (docs/roles.md)`);
  return role as Role;
}

const orgPath = (org: string) => ({ params: { path: { org_slug: org } } });

/** A member named by username, e-mail (as far as the caller sees e-mails) or id. */
async function memberOf(ctx: Context, org: string, who: string) {
  const detail = await ok(ctx.api.GET('/v1/organizations/{org_slug}', orgPath(org)));
  const needle = who.toLowerCase();
  const found = detail.members.find(
    (m) => m.user_id === who || m.username.toLowerCase() === needle || (m.email ?? '').toLowerCase() === needle,
  );
  if (!found) throw new ApiError(404, `${who} is not a member of ${org}`);
  return found;
}

/**
 * `slipway members` and `slipway invitations`: an organization's people and their roles
 * (docs/roles.md), over the organization routes. Admins and owners change them; the API says
 * why when a change is refused (an admin granting owner, the last owner leaving).
 */
export function memberCommands(program: Command) {
  const members = program.command('members').description("An organization's members and their roles");

  members
    .command('list')
    .description('Members with their roles (and, for admins, their last sign-in)')
    .argument('<org>')
    .action(async (org: string, _opts, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      const detail = await ok(ctx.api.GET('/v1/organizations/{org_slug}', orgPath(org)));
      // Admins see when each member last signed in; the others get 403 here and see the rest.
      const signIns = await ctx.api.GET('/v1/organizations/{org_slug}/sign-ins', orgPath(org));
      const last = new Map((signIns.data ?? []).map((s) => [s.user_id, s]));
      const rows = detail.members.map((m) => ({ ...m, last_sign_in: last.get(m.user_id)?.last_sign_in ?? null }));
      ctx.out.table(
        rows,
        [
          { header: 'USERNAME', value: (m) => m.username },
          { header: 'ROLE', value: (m) => m.role },
          { header: 'EMAIL', value: (m) => m.email ?? '-' },
          ...(signIns.data
            ? [
                {
                  header: 'LAST SIGN-IN',
                  value: (m: (typeof rows)[number]) =>
                    m.last_sign_in ? `${when(m.last_sign_in)} (${last.get(m.user_id)?.method ?? '?'})` : 'never',
                },
              ]
            : []),
          { header: 'ID', value: (m) => m.user_id },
        ],
        'no members',
      );
    });

  members
    .command('invite')
    .description('Invite someone by e-mail with a role; without SMTP the link is printed for you to pass on')
    .argument('<org>')
    .argument('<email>')
    .requiredOption('--role <role>', ROLES.join(', '))
    .action(async (org: string, email: string, opts: { role: string }, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      const role = roleFrom(opts.role);
      const invitation = await ok(ctx.api.POST('/v1/organizations/{org_slug}/invitations', { ...orgPath(org), body: { email, role } }));
      ctx.out.result(invitation, () => [
        `Invited ${invitation.email} to ${org} as ${invitation.role} (until ${when(invitation.expires)})`,
        invitation.delivered ? 'The invitation was e-mailed.' : `Not e-mailed (no SMTP on this server): send them ${invitation.link}`,
      ]);
    });

  members
    .command('add')
    .description('Add an existing user (username or e-mail) with a role')
    .argument('<org>')
    .argument('<user>')
    .option('--role <role>', ROLES.join(', '), 'developer')
    .action(async (org: string, user: string, opts: { role: string }, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      const role = roleFrom(opts.role);
      await ok(ctx.api.POST('/v1/organizations/{org_slug}/members', { ...orgPath(org), body: { username: user, role } }));
      ctx.out.result({ organization: org, user, role }, () => `Added ${user} to ${org} as ${role}`);
    });

  members
    .command('role')
    .description("Set a member's role")
    .argument('<org>')
    .argument('<user>', 'username, e-mail or id')
    .argument('<role>', ROLES.join(', '))
    .action(async (org: string, who: string, roleText: string, _opts, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      const role = roleFrom(roleText);
      const member = await memberOf(ctx, org, who);
      await ok(
        ctx.api.PUT('/v1/organizations/{org_slug}/members/{user_id}/role', {
          params: { path: { org_slug: org, user_id: member.user_id } },
          body: { role },
        }),
      );
      ctx.out.result({ organization: org, user_id: member.user_id, role }, () => `${member.username} is now ${role} on ${org}`);
    });

  members
    .command('remove')
    .description('Remove a member (or yourself: leave); their grants on its environments go too')
    .argument('<org>')
    .argument('<user>', 'username, e-mail or id')
    .action(async (org: string, who: string, _opts, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      const member = await memberOf(ctx, org, who);
      await ok(
        ctx.api.DELETE('/v1/organizations/{org_slug}/members/{user_id}', { params: { path: { org_slug: org, user_id: member.user_id } } }),
      );
      ctx.out.result({ organization: org, removed: member.user_id }, () => `Removed ${member.username} from ${org}`);
    });

  const invitations = program.command('invitations').description("An organization's open invitations");

  invitations
    .command('list')
    .description('Open invitations (admins)')
    .argument('<org>')
    .action(async (org: string, _opts, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      const list = await ok(ctx.api.GET('/v1/organizations/{org_slug}/invitations', orgPath(org)));
      ctx.out.table(
        list,
        [
          { header: 'ID', value: (i) => i.id },
          { header: 'EMAIL', value: (i) => i.email },
          { header: 'ROLE', value: (i) => i.role },
          { header: 'CREATED', value: (i) => when(i.created) },
          { header: 'EXPIRES', value: (i) => when(i.expires) },
        ],
        'no open invitations',
      );
    });

  invitations
    .command('revoke')
    .description('Revoke an open invitation: its link stops working')
    .argument('<org>')
    .argument('<invitation>', 'its id or e-mail address')
    .action(async (org: string, which: string, _opts, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      let id = which;
      if (which.includes('@')) {
        const open = await ok(ctx.api.GET('/v1/organizations/{org_slug}/invitations', orgPath(org)));
        const found = open.find((i) => i.email.toLowerCase() === which.toLowerCase());
        if (!found) throw new ApiError(404, `No open invitation for ${which} on ${org}`);
        id = found.id;
      }
      await ok(
        ctx.api.DELETE('/v1/organizations/{org_slug}/invitations/{invitation_id}', {
          params: { path: { org_slug: org, invitation_id: id } },
        }),
      );
      ctx.out.result({ organization: org, revoked: id }, () => `Revoked invitation ${id}`);
    });
}
