import type { Expression } from 'kysely';
import type { Db } from '../db/database.js';
import { AppError } from '../errors.js';
import { precompiled } from '../db/precompiled.js';
import { findProductionEnvironmentId } from '../environments/production-environment.js';

/**
 * The environment's slug when it is protected and the caller is neither an admin (or owner) of
 * its organization nor granted it (environment_grants: a deployer granted production); else null.
 */
async function lockedOut(db: Db, userId: string, environmentId: string): Promise<string | null> {
  const row = await db
    .selectFrom('environments as e')
    .innerJoin('projects as p', 'p.id', 'e.project_id')
    .leftJoin('memberships as m', (j) => j.onRef('m.organization_id', '=', 'p.organization_id').on('m.user_id', '=', userId))
    .leftJoin('environment_grants as g', (j) => j.onRef('g.environment_id', '=', 'e.id').on('g.user_id', '=', userId))
    .select(['e.slug', 'e.protected', 'm.admin', 'g.user_id as granted'])
    .where('e.id', '=', environmentId)
    .executeTakeFirst();
  return row?.protected && !row.admin && !(row.granted && row.admin !== null) ? row.slug : null;
}

/**
 * Protected environments accept deploys only from workspace admins, whichever route the
 * deploy comes through: the environment's own `deploy`/`promote`, or the application-level
 * `POST /applications/{id}/deploy` and `POST /releases/{id}/deploy` (which would otherwise
 * let any member roll a protected environment to any of its releases). Callers have
 * already checked membership.
 */
export async function requireDeployAccess(db: Db, userId: string, environmentId: string): Promise<void> {
  const slug = await lockedOut(db, userId, environmentId);
  if (slug) throw new AppError('FORBIDDEN', `Environment '${slug}' is protected: only workspace admins deploy to it`);
}

/**
 * A push to the auto-deploy branch deploys without anyone asking: choosing that branch is
 * choosing what gets deployed, so on a protected environment (for an application's own
 * `auto_deploy_branch`: its production) it is the admins' choice too.
 */
export async function requireBranchChangeAccess(
  db: Db,
  userId: string,
  target: { environmentId: string } | { applicationId: string },
): Promise<void> {
  const environmentId = 'environmentId' in target ? target.environmentId : await findProductionEnvironmentId(db, target.applicationId);
  const slug = environmentId ? await lockedOut(db, userId, environmentId) : null;
  if (slug)
    throw new AppError('FORBIDDEN', `Environment '${slug}' is protected: only workspace admins choose the branch that deploys to it`);
}

/**
 * What a change reaches: an environment directly, or every environment that inherits from
 * the application, project, team or organization it changes (configuration layers, the
 * application's source and settings, a project's owning team).
 */
export type ProtectedReach =
  { environmentId: string } | { applicationId: string } | { projectId: string } | { teamId: string } | { organizationId: string };

/** A configuration scope, as the configurations module names it, mapped to what it reaches. */
export function reachOfScope(scope: {
  scope: 'organization' | 'team' | 'project' | 'environment' | 'application';
  scopeId: string;
}): ProtectedReach {
  switch (scope.scope) {
    case 'organization':
      return { organizationId: scope.scopeId };
    case 'team':
      return { teamId: scope.scopeId };
    case 'project':
      return { projectId: scope.scopeId };
    case 'environment':
      return { environmentId: scope.scopeId };
    case 'application':
      return { applicationId: scope.scopeId };
  }
}

/**
 * The one rule for protected environments: a change that reaches one (its scale and pod
 * classes, any configuration layer it inherits, an application's repository, branch,
 * subdirectory, health check or other settings, a deploy, promote, rollback or run) needs
 * an organization admin, or a member granted every protected environment it reaches. Throws 403 naming the environment and the change; callers have
 * already checked membership. Shared with every module through the environments index.
 */
export async function requireProtectedEnvironmentAdmin(db: Db, userId: string, reach: ProtectedReach, change: string): Promise<void> {
  const kind = REACH_KINDS.find((k) => k in reach)!;
  const [row] = await lockedEnvironmentQuery(db, kind)({ userId, target: (reach as Record<ReachKind, string>)[kind] });
  if (row && !row.admin) throw protectedRefusal(row.slug, change);
}

/** The refusal of a change to a protected environment (403, naming it and the change). */
export function protectedRefusal(slug: string, change: string): AppError {
  return new AppError('FORBIDDEN', `Environment '${slug}' is protected: only organization admins change ${change}`);
}

// In the order a reach is read (the first key present decides).
const REACH_KINDS = ['environmentId', 'projectId', 'teamId', 'organizationId', 'applicationId'] as const;
export type ReachKind = (typeof REACH_KINDS)[number];
type LockedEnvironmentQuery = (values: { userId: string; target: string }) => Promise<Array<{ slug: string; admin: boolean | null }>>;
const lockedEnvironmentQueries = new WeakMap<Db, Map<ReachKind, LockedEnvironmentQuery>>();

/**
 * The protected environments the reach covers where the caller is neither granted nor exempt,
 * first by slug, with whether the caller is an admin of their organization (null: no member).
 * `target` may be an expression of an enclosing statement (a request's checks read in one).
 */
function lockedEnvironments(db: Db, kind: ReachKind, userId: string, target: string | Expression<string>) {
  const base = db
    .selectFrom('environments as e')
    .innerJoin('projects as p', 'p.id', 'e.project_id')
    .leftJoin('memberships as m', (j) => j.onRef('m.organization_id', '=', 'p.organization_id').on('m.user_id', '=', userId))
    .leftJoin('environment_grants as g', (j) => j.onRef('g.environment_id', '=', 'e.id').on('g.user_id', '=', userId))
    .select(['e.slug', 'm.admin'])
    .where('e.protected', '=', true)
    // A member granted the environment acts there as their role allows (the route table checked the role).
    .where((eb) => eb.or([eb('g.user_id', 'is', null), eb('m.user_id', 'is', null)]));
  const scoped =
    kind === 'environmentId'
      ? base.where('e.id', '=', target)
      : kind === 'projectId'
        ? base.where('p.id', '=', target)
        : kind === 'teamId'
          ? base.where('p.team_id', '=', target)
          : kind === 'organizationId'
            ? base.where('p.organization_id', '=', target)
            : base.where('p.id', '=', (eb) => eb.selectFrom('applications').select('project_id').where('id', '=', target));
  return scoped.orderBy('e.slug').limit(1);
}

/**
 * The slug of the first protected environment the reach covers that the caller may not change
 * without being an organization admin (null: none), as a subquery of the caller's own statement:
 * the rule of requireProtectedEnvironmentAdmin, read with a request's other checks (issue 35).
 * The caller refuses with `protectedRefusal` when it is set and the caller is no admin.
 */
export function lockedEnvironmentSlug(db: Db, kind: ReachKind, userId: string, target: string | Expression<string>) {
  return lockedEnvironments(db, kind, userId, target).clearSelect().select('e.slug');
}

/**
 * The first protected environment the reach covers where the caller is neither granted nor
 * exempt, one compiled statement per kind of reach (prepared per connection: every write to a
 * configuration or setting runs it).
 */
function lockedEnvironmentQuery(db: Db, kind: ReachKind): LockedEnvironmentQuery {
  let byKind = lockedEnvironmentQueries.get(db);
  if (!byKind) lockedEnvironmentQueries.set(db, (byKind = new Map()));
  let query = byKind.get(kind);
  if (!query) {
    query = precompiled(db, ['userId', 'target'], ({ userId, target }: { userId: string; target: string }) =>
      lockedEnvironments(db, kind, userId, target),
    );
    byKind.set(kind, query);
  }
  return query;
}
