import { Type } from 'typebox';
import { v7 as uuidv7 } from 'uuid';
import type { UsersService } from '../users/index.js';
import { atLeast, type Role } from '../../platform/access/roles.js';
import { hashToken, newToken } from '../../platform/crypto/tokens.js';
import type { Db } from '../../platform/db/database.js';
import { AppError, conflict, forbidden, isUniqueViolation, notFound } from '../../platform/errors.js';
import { commonErrorResponses, iso, Ok, Slug, Timestamp } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import { RoleName } from './organizations.schemas.js';
import type { OrganizationsService } from './organizations.service.js';

/** An invitation ready to send: the one place the mailer is wired to (none yet: the inviter is shown the link). */
export interface InvitationMessage {
  email: string;
  organization: string;
  role: Role;
  link: string;
  expires: Date;
}
export type InvitationSender = (message: InvitationMessage) => Promise<{ delivered: boolean }>;
export const showLinkToInviter: InvitationSender = async () => ({ delivered: false });

const Invitation = Type.Object(
  {
    id: Type.String(),
    email: Type.String(),
    role: RoleName,
    invited_by: Type.Union([Type.String(), Type.Null()]),
    created: Timestamp,
    expires: Timestamp,
  },
  { $id: 'Invitation' },
);
const CreatedInvitation = Type.Object({
  ...Invitation.properties,
  delivered: Type.Boolean({ description: 'whether it was e-mailed; when not, give `link` to the invitee yourself' }),
  link: Type.Optional(Type.String({ description: 'the acceptance link, shown only when it was not e-mailed' })),
});
const InviteBody = Type.Object(
  { email: Type.String({ format: 'email', maxLength: 254 }), role: RoleName },
  { additionalProperties: false },
);
const TokenParams = Type.Object({ token: Type.String({ minLength: 10, maxLength: 200 }) });
const SignUp = Type.Object(
  { username: Type.String({ minLength: 1, maxLength: 64 }), password: Type.String({ minLength: 1, maxLength: 1024 }) },
  { additionalProperties: false },
);

/**
 * Invitations by e-mail with a role: an admin invites (never above their own role; an owner for
 * an owner), the invitee accepts by link, signed in as that address or signing up with it, before
 * it expires; admins list the open ones and revoke them. Tokens are stored only as hashes.
 */
export function invitationsRoutes(deps: {
  db: Db;
  orgs: OrganizationsService;
  users: UsersService;
  ttlHours: number;
  linkBase: string | undefined;
  send: InvitationSender;
}) {
  const { db, orgs } = deps;
  const tags = ['Organizations'];
  const view = (r: { id: string; email: string; role: Role; invited_by: string | null; created_at: Date; expires_at: Date }) => ({
    id: r.id,
    email: r.email,
    role: r.role,
    invited_by: r.invited_by,
    created: iso(r.created_at),
    expires: iso(r.expires_at),
  });
  /** The invitation of a token, refused with the reason when it can no longer be used. */
  const usable = async (token: string) => {
    const row = await db
      .selectFrom('invitations as i')
      .innerJoin('organizations as o', 'o.id', 'i.organization_id')
      .select(['i.id', 'i.organization_id', 'o.slug as organization', 'i.email', 'i.role', 'i.expires_at', 'i.accepted_at', 'i.revoked_at'])
      .where('i.token_hash', '=', hashToken(token))
      .executeTakeFirst();
    if (!row) throw notFound('Invitation');
    if (row.revoked_at) throw new AppError('GONE', 'This invitation was revoked: ask for a new one');
    if (row.accepted_at) throw new AppError('GONE', 'This invitation was already accepted');
    if (row.expires_at.getTime() <= Date.now()) throw new AppError('GONE', 'This invitation has expired: ask for a new one');
    return row;
  };

  return async (app: App) => {
    app.post(
      '/organizations/:org_slug/invitations',
      {
        schema: {
          tags,
          summary: 'Invite someone by e-mail with a role (admins; owners to invite an owner)',
          params: Type.Object({ org_slug: Slug }),
          body: InviteBody,
          response: { 201: CreatedInvitation, ...commonErrorResponses },
        },
      },
      async (request, reply) => {
        const caller = currentUser(request);
        const { org, membership } = await orgs.resolve(caller.id, request.params.org_slug);
        const { role } = request.body;
        const email = request.body.email.toLowerCase();
        if (!atLeast(membership.role, 'admin')) throw forbidden('Only organization admins and owners invite');
        if (!atLeast(membership.role, role)) throw forbidden(`Your role is ${membership.role}: you cannot invite as ${role}`);
        if ((await orgs.describe(org.id)).members.some((m) => m.email.toLowerCase() === email))
          throw conflict(`${email} is already a member`);
        const token = newToken('inv');
        const expires = new Date(Date.now() + deps.ttlHours * 3600_000);
        const row = await db.transaction().execute(async (trx) => {
          // An expired invitation to the same address gives way to the new one.
          await trx
            .updateTable('invitations')
            .set({ revoked_at: new Date() })
            .where('organization_id', '=', org.id)
            .where((eb) => eb(eb.fn('lower', ['email']), '=', email))
            .where('accepted_at', 'is', null)
            .where('revoked_at', 'is', null)
            .where('expires_at', '<=', new Date())
            .execute();
          try {
            return await trx
              .insertInto('invitations')
              .values({
                id: uuidv7(),
                organization_id: org.id,
                email,
                role,
                token_hash: hashToken(token),
                invited_by: caller.id,
                expires_at: expires,
              })
              .returningAll()
              .executeTakeFirstOrThrow();
          } catch (err) {
            if (isUniqueViolation(err)) throw conflict(`${email} already has an open invitation: revoke it first`);
            throw err;
          }
        });
        const base = deps.linkBase ?? `${request.protocol}://${request.host}`;
        const link = `${base.replace(/\/$/, '')}/invitations/${token}`;
        const { delivered } = await deps.send({ email, organization: org.slug, role, link, expires });
        return reply.code(201).send({ ...view(row), delivered, ...(delivered ? {} : { link }) });
      },
    );

    app.get(
      '/organizations/:org_slug/invitations',
      {
        schema: {
          tags,
          summary: 'Open invitations (admins)',
          params: Type.Object({ org_slug: Slug }),
          response: { 200: Type.Array(Invitation), ...commonErrorResponses },
        },
      },
      async (request) => {
        const { org } = await orgs.resolve(currentUser(request).id, request.params.org_slug);
        const rows = await db
          .selectFrom('invitations')
          .selectAll()
          .where('organization_id', '=', org.id)
          .where('accepted_at', 'is', null)
          .where('revoked_at', 'is', null)
          .where('expires_at', '>', new Date())
          .orderBy('created_at')
          .execute();
        return rows.map(view);
      },
    );

    app.delete(
      '/organizations/:org_slug/invitations/:invitation_id',
      {
        schema: {
          tags,
          summary: 'Revoke an open invitation (admins)',
          params: Type.Object({ org_slug: Slug, invitation_id: Type.String({ format: 'uuid' }) }),
          response: { 200: Ok, ...commonErrorResponses },
        },
      },
      async (request) => {
        const { org } = await orgs.resolve(currentUser(request).id, request.params.org_slug);
        const done = await db
          .updateTable('invitations')
          .set({ revoked_at: new Date() })
          .where('id', '=', request.params.invitation_id)
          .where('organization_id', '=', org.id)
          .where('accepted_at', 'is', null)
          .where('revoked_at', 'is', null)
          .executeTakeFirst();
        if (Number(done.numUpdatedRows) === 0) throw notFound('Open invitation');
        return { ok: true };
      },
    );

    app.get(
      '/invitations/:token',
      {
        config: { public: true },
        schema: {
          tags,
          summary: 'What an invitation offers (anyone holding its link)',
          params: TokenParams,
          response: {
            200: Type.Object({ organization: Type.String(), email: Type.String(), role: RoleName, expires: Timestamp }),
            ...commonErrorResponses,
          },
        },
      },
      async (request) => {
        const row = await usable(request.params.token);
        return { organization: row.organization, email: row.email, role: row.role, expires: iso(row.expires_at) };
      },
    );

    const accept = async (invitation: Awaited<ReturnType<typeof usable>>, user: { id: string; email: string }) => {
      if (user.email.toLowerCase() !== invitation.email.toLowerCase())
        throw forbidden(`This invitation is for ${invitation.email}: sign in with that address`);
      const accepted = await db
        .updateTable('invitations')
        .set({ accepted_at: new Date(), accepted_by: user.id })
        .where('id', '=', invitation.id)
        .where('accepted_at', 'is', null)
        .where('revoked_at', 'is', null)
        .executeTakeFirst();
      if (Number(accepted.numUpdatedRows) === 0) throw new AppError('GONE', 'This invitation is no longer open');
      if (!(await orgs.admit(invitation.organization_id, user.id, invitation.role)))
        throw conflict(`You are already a member of ${invitation.organization}`);
      return { organization: invitation.organization, role: invitation.role, user_id: user.id };
    };
    const Accepted = Type.Object({ organization: Type.String(), role: RoleName, user_id: Type.String() });

    app.post(
      '/invitations/:token/accept',
      {
        schema: {
          tags,
          summary: 'Accept an invitation, signed in as the invited address',
          params: TokenParams,
          response: { 200: Accepted, ...commonErrorResponses },
        },
      },
      async (request) => accept(await usable(request.params.token), currentUser(request)),
    );

    app.post(
      '/invitations/:token/sign-up',
      {
        config: { public: true },
        schema: {
          tags,
          summary: 'Accept an invitation by signing up with the invited address (then sign in)',
          params: TokenParams,
          body: SignUp,
          response: { 201: Accepted, ...commonErrorResponses },
        },
      },
      async (request, reply) => {
        const invitation = await usable(request.params.token);
        const user = await deps.users.create({ username: request.body.username, email: invitation.email, password: request.body.password });
        return reply.code(201).send(await accept(invitation, user));
      },
    );
  };
}
