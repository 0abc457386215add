import { Type } from 'typebox';
import type { Db } from '../../platform/db/database.js';
import { notFound } from '../../platform/errors.js';
import { commonErrorResponses } from '../../platform/http/schemas.js';
import { currentUser, requireSiteAdmin } from '../../platform/http/principal.js';
import type { App } from '../../platform/http/types.js';
import type { SessionList } from './session-list.js';

const SignIn = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    method: Type.Union([Type.Literal('password'), Type.Literal('oidc'), Type.Literal('cli-browser')], {
      description: 'password or oidc: a browser session; cli-browser: the key a CLI received by the browser login',
    }),
    created: Type.String({ format: 'date-time' }),
    last_used: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    address: Type.Union([Type.String(), Type.Null()], { description: 'Where it signed in from (a CLI login: where it was last used)' }),
    user_agent: Type.Union([Type.String(), Type.Null()], { description: "The browser's user agent, or the CLI's name" }),
    expires: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description: 'When it ends if left unused (the idle timeout) or at the latest (its lifetime)',
    }),
    current: Type.Boolean({ description: 'The credential of this request' }),
  },
  { $id: 'SignInSession' },
);
const Revoked = Type.Object({ ok: Type.Boolean(), revoked: Type.Integer({ description: 'How many sign-ins ended' }) });
const tags = ['Authentication'];

/**
 * A person's own sign-ins (`/users/me/sessions`), and a site administrator's view of anyone's.
 * An organization admin sees members' last sign-in only (organizations' `/sign-ins`): a session
 * spans every organization of its person, so ending it is theirs or the site's to decide.
 */
export function sessionRoutes(sessions: SessionList, db: Db) {
  const existing = async (userId: string) => {
    const user = await db.selectFrom('users').select('id').where('id', '=', userId).executeTakeFirst();
    if (!user) throw notFound('User');
    return user.id;
  };
  return async (app: App) => {
    app.get(
      '/users/me/sessions',
      { schema: { tags, summary: 'Your open sign-ins', response: { 200: Type.Array(SignIn), ...commonErrorResponses } } },
      async (request) => sessions.list(currentUser(request).id, request.principal!.credentialId),
    );

    app.delete(
      '/users/me/sessions',
      {
        schema: {
          tags,
          summary: 'End all your sign-ins but the one calling',
          response: { 200: Revoked, ...commonErrorResponses },
        },
      },
      async (request) => ({ ok: true, revoked: await sessions.revokeAll(currentUser(request).id, request.principal!.credentialId) }),
    );

    app.delete(
      '/users/me/sessions/:session_id',
      {
        schema: {
          tags,
          summary: 'End one of your sign-ins (its next request gets 401)',
          params: Type.Object({ session_id: Type.String({ format: 'uuid' }) }),
          response: { 200: Revoked, ...commonErrorResponses },
        },
      },
      async (request) => {
        await sessions.revoke(currentUser(request).id, request.params.session_id);
        return { ok: true, revoked: 1 };
      },
    );

    app.get(
      '/users/:user_id/sessions',
      {
        schema: {
          tags,
          summary: "A user's open sign-ins (site admins)",
          params: Type.Object({ user_id: Type.String({ format: 'uuid' }) }),
          response: { 200: Type.Array(SignIn), ...commonErrorResponses },
        },
      },
      async (request) => {
        requireSiteAdmin(request);
        return sessions.list(await existing(request.params.user_id), request.principal!.credentialId);
      },
    );

    app.delete(
      '/users/:user_id/sessions',
      {
        schema: {
          tags,
          summary: "End all of a user's sign-ins (site admins; their API keys stay: revoke those apart)",
          params: Type.Object({ user_id: Type.String({ format: 'uuid' }) }),
          response: { 200: Revoked, ...commonErrorResponses },
        },
      },
      async (request) => {
        const admin = requireSiteAdmin(request);
        const userId = await existing(request.params.user_id);
        // An administrator ending their own: the one calling stays, as for /users/me/sessions.
        return { ok: true, revoked: await sessions.revokeAll(userId, userId === admin.id ? request.principal!.credentialId : null) };
      },
    );
  };
}
