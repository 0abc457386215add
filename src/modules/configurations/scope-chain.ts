import type { Db } from '../../platform/db/database.js';
import type { ConfigScope } from '../../platform/db/schema.js';
import { notFound } from '../../platform/errors.js';
import type { ScopeRef } from './configurations.repository.js';

/** What each stored scope is called in the workspace vocabulary of the API. */
const SCOPE_LABELS: Record<ConfigScope, 'workspace' | 'team' | 'project' | 'environment' | 'service'> = {
  organization: 'workspace',
  team: 'team',
  project: 'project',
  environment: 'environment',
  application: 'service',
};

export interface ScopeLayer extends ScopeRef {
  label: (typeof SCOPE_LABELS)[ConfigScope];
  slug: string;
}

/**
 * The configuration layers of a service (application) in an environment, highest first:
 * workspace → team (when the project has one) → project → environment → service.
 * A lower layer's variable overrides a higher one's of the same name.
 */
export async function serviceScopeChain(db: Db, applicationId: string, environmentId: string): Promise<ScopeLayer[]> {
  const row = await db
    .selectFrom('applications as a')
    .innerJoin('projects as p', 'p.id', 'a.project_id')
    .innerJoin('organizations as o', 'o.id', 'p.organization_id')
    .innerJoin('environments as e', (j) => j.onRef('e.project_id', '=', 'p.id').on('e.id', '=', environmentId))
    .leftJoin('teams as t', 't.id', 'p.team_id')
    .select([
      'o.id as org_id',
      'o.slug as org_slug',
      't.id as team_id',
      't.slug as team_slug',
      'p.id as project_id',
      'p.slug as project_slug',
      'e.id as env_id',
      'e.slug as env_slug',
      'a.id as app_id',
      'a.slug as app_slug',
    ])
    .where('a.id', '=', applicationId)
    .executeTakeFirst();
  if (!row) throw notFound('Service in this environment');
  const layer = (scope: ConfigScope, scopeId: string, slug: string): ScopeLayer => ({ scope, scopeId, slug, label: SCOPE_LABELS[scope] });
  return [
    layer('organization', row.org_id, row.org_slug),
    ...(row.team_id ? [layer('team', row.team_id, row.team_slug!)] : []),
    layer('project', row.project_id, row.project_slug),
    layer('environment', row.env_id, row.env_slug),
    layer('application', row.app_id, row.app_slug),
  ];
}

/** The organization a configuration scope belongs to (its owner: the scope exists, the caller checked access). */
export async function scopeOrganizationId(db: Db, scope: ScopeRef): Promise<string> {
  if (scope.scope === 'organization') return scope.scopeId;
  const row =
    scope.scope === 'team'
      ? await db.selectFrom('teams').select('organization_id').where('id', '=', scope.scopeId).executeTakeFirst()
      : await db
          .selectFrom('projects as p')
          .select('p.organization_id')
          .where('p.id', '=', (eb) =>
            scope.scope === 'project'
              ? eb.val(scope.scopeId)
              : scope.scope === 'environment'
                ? eb.selectFrom('environments').select('project_id').where('id', '=', scope.scopeId)
                : eb.selectFrom('applications').select('project_id').where('id', '=', scope.scopeId),
          )
          .executeTakeFirst();
  if (!row) throw notFound('Configuration scope');
  return row.organization_id;
}
