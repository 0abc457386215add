import type { Db } from '../db/database.js';
import { AppError, notFound } from '../errors.js';
import type { KeyScope } from './key-scope.js';
import type { KeyAction } from './route-actions.js';

/** A key's limits as the API names them: slugs, each inside the one before (environment inside the project). */
export interface ScopeNames {
  organization?: string;
  project?: string;
  application?: string;
  environment?: string;
  actions?: KeyAction[];
}

/**
 * Turns the slugs a key is created with into ids, checking that the creating user is a member of
 * the organization (a key never starts with more than its user has; the check is repeated on
 * every use) and that each named thing is inside the one before.
 */
export async function resolveScopeNames(db: Db, userId: string, names: ScopeNames): Promise<KeyScope> {
  const scope: KeyScope = {
    organizationId: null,
    projectId: null,
    applicationId: null,
    environmentId: null,
    actions: names.actions ? [...new Set(names.actions)] : null,
  };
  const below = names.project ?? names.application ?? names.environment;
  if (!names.organization) {
    if (below) throw new AppError('VALIDATION', 'A key limited to a project, application or environment names its organization too');
    return scope;
  }
  const org = await db
    .selectFrom('organizations as o')
    .innerJoin('memberships as m', (j) => j.onRef('m.organization_id', '=', 'o.id').on('m.user_id', '=', userId))
    .select('o.id')
    .where('o.slug', '=', names.organization)
    .executeTakeFirst();
  if (!org) throw notFound(`Organization '${names.organization}'`);
  scope.organizationId = org.id;
  if (!names.project) {
    if (names.application || names.environment)
      throw new AppError('VALIDATION', 'A key limited to an application or environment names its project too');
    return scope;
  }
  const project = await db
    .selectFrom('projects')
    .select('id')
    .where('organization_id', '=', org.id)
    .where('slug', '=', names.project)
    .executeTakeFirst();
  if (!project) throw notFound(`Project '${names.project}'`);
  scope.projectId = project.id;
  if (names.application) {
    const app = await db
      .selectFrom('applications')
      .select('id')
      .where('project_id', '=', project.id)
      .where('slug', '=', names.application)
      .executeTakeFirst();
    if (!app) throw notFound(`Application '${names.application}'`);
    scope.applicationId = app.id;
  }
  if (names.environment) {
    const env = await db
      .selectFrom('environments')
      .select('id')
      .where('project_id', '=', project.id)
      .where('slug', '=', names.environment)
      .where('deleted_at', 'is', null)
      .executeTakeFirst();
    if (!env) throw notFound(`Environment '${names.environment}'`);
    scope.environmentId = env.id;
  }
  return scope;
}
