import { Type } from 'typebox';
import type { Db } from '../../platform/db/database.js';
import { conflict, isUniqueViolation, notFound } from '../../platform/errors.js';
import { commonErrorResponses, iso, Ok, Slug, Timestamp } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import type { OrganizationsService } from './organizations.service.js';

const Grant = Type.Object(
  {
    project: Type.String(),
    environment: Type.String(),
    user_id: Type.String(),
    username: Type.String(),
    created: Timestamp,
  },
  { $id: 'EnvironmentGrant' },
);
const GrantBody = Type.Object(
  {
    project: Slug,
    environment: Slug,
    username: Type.String({ minLength: 1, maxLength: 254, description: 'Username or email of a member' }),
  },
  { additionalProperties: false },
);
const GrantParams = Type.Object({ org_slug: Slug, project_slug: Slug, env: Slug, user_id: Type.String({ format: 'uuid' }) });

/**
 * Per-environment grants: a member allowed to act, as their role allows, on one protected
 * environment (a deployer who deploys to production). Admins give and take them (the route
 * table's role rule); every member lists them.
 */
export function grantsRoutes(db: Db, orgs: OrganizationsService) {
  const tags = ['Organizations'];
  const environmentOf = async (organizationId: string, project: string, environment: string) => {
    const row = await db
      .selectFrom('environments as e')
      .innerJoin('projects as p', 'p.id', 'e.project_id')
      .select('e.id')
      .where('p.organization_id', '=', organizationId)
      .where('p.slug', '=', project)
      .where('e.slug', '=', environment)
      .where('e.deleted_at', 'is', null)
      .executeTakeFirst();
    if (!row) throw notFound(`Environment '${project}/${environment}'`);
    return row.id;
  };
  const list = (organizationId: string) =>
    db
      .selectFrom('environment_grants as g')
      .innerJoin('environments as e', 'e.id', 'g.environment_id')
      .innerJoin('projects as p', 'p.id', 'e.project_id')
      .innerJoin('users as u', 'u.id', 'g.user_id')
      .select(['p.slug as project', 'e.slug as environment', 'u.id as user_id', 'u.username', 'g.created_at'])
      .where('p.organization_id', '=', organizationId)
      .orderBy('p.slug')
      .orderBy('e.slug')
      .orderBy('u.username')
      .execute()
      .then((rows) => rows.map(({ created_at, ...r }) => ({ ...r, created: iso(created_at) })));

  return async (app: App) => {
    app.get(
      '/organizations/:org_slug/grants',
      {
        schema: {
          tags,
          summary: "The organization's per-environment grants",
          params: Type.Object({ org_slug: Slug }),
          response: { 200: Type.Array(Grant), ...commonErrorResponses },
        },
      },
      async (request) => {
        const { org } = await orgs.resolve(currentUser(request).id, request.params.org_slug);
        return list(org.id);
      },
    );

    app.post(
      '/organizations/:org_slug/grants',
      {
        schema: {
          tags,
          summary: 'Grant a member one protected environment (admins)',
          params: Type.Object({ org_slug: Slug }),
          body: GrantBody,
          response: { 201: Type.Array(Grant), ...commonErrorResponses },
        },
      },
      async (request, reply) => {
        const caller = currentUser(request);
        const { org } = await orgs.resolve(caller.id, request.params.org_slug);
        const environmentId = await environmentOf(org.id, request.body.project, request.body.environment);
        const member = (await orgs.describe(org.id)).members.find(
          (m) => m.username === request.body.username || m.email.toLowerCase() === request.body.username.toLowerCase(),
        );
        if (!member) throw notFound(`Member '${request.body.username}'`);
        try {
          await db
            .insertInto('environment_grants')
            .values({ environment_id: environmentId, user_id: member.user_id, granted_by: caller.id })
            .execute();
        } catch (err) {
          if (isUniqueViolation(err)) throw conflict(`${member.username} already has ${request.body.project}/${request.body.environment}`);
          throw err;
        }
        return reply.code(201).send(await list(org.id));
      },
    );

    app.delete(
      '/organizations/:org_slug/grants/:project_slug/:env/:user_id',
      {
        schema: { tags, summary: 'Take a grant back (admins)', params: GrantParams, response: { 200: Ok, ...commonErrorResponses } },
      },
      async (request) => {
        const { org } = await orgs.resolve(currentUser(request).id, request.params.org_slug);
        const environmentId = await environmentOf(org.id, request.params.project_slug, request.params.env);
        const gone = await db
          .deleteFrom('environment_grants')
          .where('environment_id', '=', environmentId)
          .where('user_id', '=', request.params.user_id)
          .executeTakeFirst();
        if (Number(gone.numDeletedRows) === 0) throw notFound('Grant');
        return { ok: true };
      },
    );
  };
}
