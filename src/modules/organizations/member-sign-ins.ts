import { Type } from 'typebox';
import type { Db } from '../../platform/db/database.js';
import { forbidden } from '../../platform/errors.js';
import { commonErrorResponses, isoOrNull, Slug } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import type { OrganizationsService } from './organizations.service.js';

const MemberSignIn = Type.Object({
  user_id: Type.String({ format: 'uuid' }),
  username: Type.String(),
  role: Type.String(),
  last_sign_in: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  method: Type.Union([Type.String(), Type.Null()], { description: 'password or oidc' }),
});

/**
 * When each member last signed in, and how (organization admins and owners). Not where from nor
 * from what device: a session belongs to its person across all their organizations, so only they
 * and site administrators list and end sessions (`/users/me/sessions`, `/users/{id}/sessions`).
 */
export function memberSignInRoutes(db: Db, orgs: OrganizationsService) {
  return async (app: App) => {
    app.get(
      '/organizations/:org_slug/sign-ins',
      {
        schema: {
          tags: ['Organizations'],
          summary: "Members' last sign-in (admins)",
          params: Type.Object({ org_slug: Slug }),
          response: { 200: Type.Array(MemberSignIn), ...commonErrorResponses },
        },
      },
      async (request) => {
        const { org, membership } = await orgs.resolve(currentUser(request).id, request.params.org_slug);
        if (!membership.admin) throw forbidden('Only organization admins and owners see members’ sign-ins');
        const rows = await db
          .selectFrom('memberships as m')
          .innerJoin('users as u', 'u.id', 'm.user_id')
          .select(['u.id', 'u.username', 'm.role', 'u.last_sign_in_at', 'u.last_sign_in_method'])
          .where('m.organization_id', '=', org.id)
          .orderBy('m.created_at')
          .execute();
        return rows.map((r) => ({
          user_id: r.id,
          username: r.username,
          role: r.role,
          last_sign_in: isoOrNull(r.last_sign_in_at),
          method: r.last_sign_in_method,
        }));
      },
    );
  };
}
