import type { Db } from '../db/database.js';
import { precompiled } from '../db/precompiled.js';
import { AppError } from '../errors.js';
import { describeNeed, type KeyAction, type RouteNeed } from './route-actions.js';

/**
 * A credential's limits: where it reaches (an organization, then optionally a project, an
 * application and an environment of it) and what it may do there. Null at a level: not limited
 * there. A credential without limits (a session, a key of before) carries no scope at all.
 * Written as a grant so roles can later produce one too: the check below is "does the grant
 * cover what this request needs, where it acts".
 */
export interface KeyScope {
  organizationId: string | null;
  projectId: string | null;
  applicationId: string | null;
  environmentId: string | null;
  actions: KeyAction[] | null;
}

export const isLimited = (s: KeyScope) =>
  s.actions !== null || s.organizationId !== null || s.projectId !== null || s.applicationId !== null || s.environmentId !== null;

/** Where a request acts: the levels it names (path, query or body), completed upwards. */
export interface Position {
  organizationId: string | null;
  projectId: string | null;
  applicationId: string | null;
  environmentId: string | null;
  /** A name or id the request gives that could not be placed (unknown, or not where the path says). */
  unplaced: string | null;
  /**
   * The caller's membership in the organization of the application found by id, read in the same
   * statement (issue 35: one round trip fewer on every per-application write); absent when not read.
   */
  membership?: { organizationId: string; row: PositionMembership | undefined };
}

/** A member's role in an organization, with what route access needs of the organization. */
export interface PositionMembership {
  role: string;
  slug: string;
  viewers_see_protected_logs: boolean;
}

type ApplicationWithMembership = { id: string; project_id: string; organization_id: string; slug: string } & {
  role: string | null;
  viewers_see_protected_logs: boolean;
};
const applicationWithMembershipQueries = new WeakMap<Db, (v: { id: string; userId: string }) => Promise<ApplicationWithMembership[]>>();

/** The application by id with its organization and the caller's membership there: one prepared statement. */
function applicationWithMembership(db: Db, id: string, userId: string) {
  let query = applicationWithMembershipQueries.get(db);
  if (!query) {
    query = precompiled(db, ['id', 'userId'], ({ id, userId }: { id: string; userId: string }) =>
      db
        .selectFrom('applications as a')
        .innerJoin('projects as p', 'p.id', 'a.project_id')
        .innerJoin('organizations as o', 'o.id', 'p.organization_id')
        .leftJoin('memberships as m', (j) => j.onRef('m.organization_id', '=', 'p.organization_id').on('m.user_id', '=', userId))
        .select(['a.id', 'a.project_id', 'p.organization_id', 'o.slug', 'o.viewers_see_protected_logs', 'm.role'])
        .where('a.id', '=', id),
    );
    applicationWithMembershipQueries.set(db, query);
  }
  return query({ id, userId }).then((rows) => rows[0]);
}

type Fields = Record<string, unknown>;

const str = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 ? v : null);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Records that belong to one application environment, by the path parameter that names them. */
const RECORD_TABLES = {
  image_id: 'images',
  release_id: 'releases',
  deployment_id: 'deployments',
  run_id: 'one_off_runs',
  domain_id: 'domains',
} as const;

/**
 * Places a request: path parameters first (`org_slug`/`workspace`, `project_slug`/`project`,
 * `application_id`, `app_slug`/`service`, `env`, a record's id), then the identifiers requests
 * carry in their query or body (`environment`, `service`, `project_id`, `organization_id`,
 * `organization`), each resolved where the path puts it.
 */
export async function positionOf(db: Db, params: Fields, query: Fields, body: Fields, userId?: string): Promise<Position> {
  const pos: Position = { organizationId: null, projectId: null, applicationId: null, environmentId: null, unplaced: null };
  const unplaced = (what: string) => {
    pos.unplaced ??= what;
  };
  const setApplication = async (where: { id: string } | { slug: string }) => {
    if ('id' in where && userId !== undefined && !pos.membership && UUID.test(where.id)) {
      const row = await applicationWithMembership(db, where.id, userId);
      if (!row || (pos.applicationId && pos.applicationId !== row.id)) return unplaced(`application '${where.id}'`);
      pos.applicationId = row.id;
      pos.projectId = row.project_id;
      pos.organizationId = row.organization_id;
      const { role, slug, viewers_see_protected_logs } = row;
      pos.membership = { organizationId: row.organization_id, row: role === null ? undefined : { role, slug, viewers_see_protected_logs } };
      return;
    }
    let q = db
      .selectFrom('applications as a')
      .innerJoin('projects as p', 'p.id', 'a.project_id')
      .select(['a.id', 'a.project_id', 'p.organization_id']);
    if ('id' in where) {
      if (!UUID.test(where.id)) return unplaced(`application '${where.id}'`);
      q = q.where('a.id', '=', where.id);
    } else {
      if (!pos.projectId) return unplaced(`application '${where.slug}'`);
      q = q.where('a.project_id', '=', pos.projectId).where('a.slug', '=', where.slug);
    }
    const row = await q.executeTakeFirst();
    if (!row || (pos.applicationId && pos.applicationId !== row.id))
      return unplaced(`application '${'id' in where ? where.id : where.slug}'`);
    pos.applicationId = row.id;
    pos.projectId = row.project_id;
    pos.organizationId = row.organization_id;
  };
  const setEnvironment = async (name: string) => {
    if (!pos.projectId) return unplaced(`environment '${name}'`);
    let q = db.selectFrom('environments').select('id').where('project_id', '=', pos.projectId).where('deleted_at', 'is', null);
    q = UUID.test(name) ? q.where((eb) => eb.or([eb('id', '=', name), eb('slug', '=', name)])) : q.where('slug', '=', name);
    const row = await q.executeTakeFirst();
    if (!row || (pos.environmentId && pos.environmentId !== row.id)) return unplaced(`environment '${name}'`);
    pos.environmentId = row.id;
  };

  const orgSlug = str(params.org_slug) ?? str(params.workspace) ?? str(body.organization);
  if (orgSlug) {
    const row = await db.selectFrom('organizations').select('id').where('slug', '=', orgSlug).executeTakeFirst();
    if (row) pos.organizationId = row.id;
    else unplaced(`organization '${orgSlug}'`);
  }
  const orgId = str(body.organization_id);
  if (orgId) {
    if (!UUID.test(orgId) || (pos.organizationId && pos.organizationId !== orgId)) unplaced(`organization '${orgId}'`);
    else pos.organizationId = orgId;
  }
  const projectSlug = str(params.project_slug) ?? str(params.project);
  if (projectSlug && pos.organizationId) {
    const row = await db
      .selectFrom('projects')
      .select('id')
      .where('organization_id', '=', pos.organizationId)
      .where('slug', '=', projectSlug)
      .executeTakeFirst();
    if (row) pos.projectId = row.id;
    else unplaced(`project '${projectSlug}'`);
  }
  const projectId = str(params.project_id) ?? str(body.project_id);
  if (projectId) {
    const row = UUID.test(projectId)
      ? await db.selectFrom('projects').select(['id', 'organization_id']).where('id', '=', projectId).executeTakeFirst()
      : undefined;
    if (row && (!pos.projectId || pos.projectId === row.id)) {
      pos.projectId = row.id;
      pos.organizationId = row.organization_id;
    } else unplaced(`project '${projectId}'`);
  }

  const applicationId = str(params.application_id);
  if (applicationId) await setApplication({ id: applicationId });
  for (const [param, table] of Object.entries(RECORD_TABLES)) {
    const id = str(params[param]);
    if (!id) continue;
    const row = UUID.test(id)
      ? await db.selectFrom(table).select(['application_id', 'environment_id']).where('id', '=', id).executeTakeFirst()
      : undefined;
    if (!row) {
      unplaced(`${param.replace('_id', '')} '${id}'`);
      continue;
    }
    await setApplication({ id: row.application_id });
    if (row.environment_id) pos.environmentId ??= row.environment_id;
  }
  const deployId = str(params.deploy_id);
  if (deployId) {
    const row = UUID.test(deployId)
      ? await db.selectFrom('environment_deploys').select('environment_id').where('id', '=', deployId).executeTakeFirst()
      : undefined;
    if (row) pos.environmentId ??= row.environment_id;
    else unplaced(`deploy '${deployId}'`);
  }
  const appSlug = str(params.app_slug) ?? str(params.service) ?? str(query.service) ?? str(body.service);
  if (appSlug) await setApplication({ slug: appSlug });
  const envName = str(params.env) ?? str(query.environment) ?? str(body.environment);
  if (envName) await setEnvironment(envName);
  return pos;
}

export interface ScopeRefusal {
  reason: string;
}

/** The application's production environment: where an application-wide change without `environment` lands. */
export async function productionOf(db: Db, applicationId: string): Promise<string | null> {
  const row = await db
    .selectFrom('applications as a')
    .innerJoin('environments as e', (j) => j.onRef('e.project_id', '=', 'a.project_id').on('e.slug', '=', 'production'))
    .select('e.id')
    .where('a.id', '=', applicationId)
    .where('e.deleted_at', 'is', null)
    .executeTakeFirst();
  return row?.id ?? null;
}

async function nameOf(db: Db, level: Level, id: string): Promise<string> {
  const table = {
    organizationId: 'organizations',
    projectId: 'projects',
    applicationId: 'applications',
    environmentId: 'environments',
  } as const;
  const row = await db.selectFrom(table[level]).select('slug').where('id', '=', id).executeTakeFirst();
  return row ? `'${row.slug}'` : id;
}

type Level = 'organizationId' | 'projectId' | 'applicationId' | 'environmentId';
const LEVELS: Array<[Level, string]> = [
  ['organizationId', 'organization'],
  ['projectId', 'project'],
  ['applicationId', 'application'],
  ['environmentId', 'environment'],
];

/**
 * Whether a scoped credential may make this request; the refusal's reason otherwise. One rule
 * for every route: the route's need (route-actions.ts) must be among the key's actions, and at
 * every level the key is limited, the request must name the same thing. Two allowances keep
 * narrow keys usable: a read may leave lower levels unnamed (a project's application list, an
 * application's records across its environments), and an application-wide change that names no
 * environment acts on the application's production (what those routes default to).
 * The key's user must still be a member of the key's organization: removing the user removes
 * the key's reach, checked on every request (never cached).
 */
export async function checkScope(
  db: Db,
  userId: string,
  scope: KeyScope,
  request: { method: string; need: RouteNeed; params: Fields; query: Fields; body: Fields; credentialId: string; position?: Position },
): Promise<ScopeRefusal | null> {
  if (!isLimited(scope)) return null;
  const { need } = request;
  if (need === 'own-key' && request.params.id === request.credentialId) return null;
  if (typeof need === 'string')
    return { reason: 'A scoped API key cannot manage keys, users or organizations: use a session or a key without limits' };
  if (scope.actions && !need.anyOf.some((a) => scope.actions!.includes(a)))
    return { reason: `This API key may ${scope.actions.map((a) => `'${a}'`).join(', ')}; this request needs ${describeNeed(need)}` };
  if (scope.organizationId) {
    const member = await db
      .selectFrom('memberships')
      .select('user_id')
      .where('organization_id', '=', scope.organizationId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
    if (!member) return { reason: "This API key's user is no longer a member of its organization" };
  }
  const read = request.method === 'GET' || request.method === 'HEAD';
  const pos = request.position ?? (await positionOf(db, request.params, request.query, request.body));
  for (const [level, word] of LEVELS) {
    const limit = scope[level];
    if (!limit) continue;
    let at = pos[level];
    if (!at && level === 'environmentId' && !read && pos.applicationId) at = await productionOf(db, pos.applicationId);
    if (at === limit) continue;
    if (pos.unplaced)
      return { reason: `This API key is limited to ${word} ${await nameOf(db, level, limit)}; ${pos.unplaced} is not there` };
    if (at)
      return {
        reason: `This API key is limited to ${word} ${await nameOf(db, level, limit)}; this request acts on ${word} ${await nameOf(db, level, at)}`,
      };
    if (read && level !== 'organizationId') continue;
    return {
      reason: `This API key is limited to ${word} ${await nameOf(db, level, limit)}; this request is not limited to one ${word}${level === 'organizationId' ? ' (it spans every organization)' : ''}`,
    };
  }
  return null;
}

/** 403 with the reason: the audit hooks record every refusal with its message. */
export function scopeRefused(refusal: ScopeRefusal): AppError {
  return new AppError('FORBIDDEN', refusal.reason);
}
