import { v7 as uuidv7 } from 'uuid';
import type { Db } from '../db/database.js';
import { notFound } from '../errors.js';

/**
 * The environment that application-level pipeline endpoints act on: the project's
 * `production` environment (created with the project).
 */
export async function productionEnvironmentId(db: Db, applicationId: string): Promise<string> {
  const id = await findProductionEnvironmentId(db, applicationId);
  if (!id) throw notFound('Production environment of the application');
  return id;
}

/**
 * Creates a new project's `production` environment, in the caller's transaction. It lives here,
 * below the modules, because the projects module creates it and the environments module (above
 * projects in the layering) owns everything else about environments.
 */
export async function createProductionEnvironment(db: Db, projectId: string): Promise<void> {
  await db
    .insertInto('environments')
    .values({ id: uuidv7(), project_id: projectId, name: 'production', slug: 'production', env_type: 'production' })
    .execute();
}

/** As `productionEnvironmentId`, but null when there is none (database errors still throw). */
export async function findProductionEnvironmentId(db: Db, applicationId: string): Promise<string | null> {
  const row = await db
    .selectFrom('environments as e')
    .innerJoin('applications as a', 'a.project_id', 'e.project_id')
    .select('e.id')
    .where('a.id', '=', applicationId)
    .where('e.env_type', '=', 'production')
    .orderBy((eb) => eb.case().when('e.slug', '=', 'production').then(0).else(1).end())
    .orderBy('e.created_at')
    .executeTakeFirst();
  return row?.id ?? null;
}

/** Locks the application row for the rest of the transaction: version numbers are taken under it. */
export async function lockApplication(trx: Db, applicationId: string): Promise<boolean> {
  const row = await trx.selectFrom('applications').select('id').where('id', '=', applicationId).forUpdate().executeTakeFirst();
  return Boolean(row);
}

/**
 * The environment a list is narrowed to by `?environment=<slug>`: null (every environment)
 * without a slug; 404 when the application's project has no environment of that slug.
 */
export async function environmentFilter(db: Db, applicationId: string, slug: string | undefined): Promise<string | null> {
  if (slug === undefined) return null;
  const row = await db
    .selectFrom('environments as e')
    .innerJoin('applications as a', 'a.project_id', 'e.project_id')
    .select('e.id')
    .where('a.id', '=', applicationId)
    .where('e.slug', '=', slug)
    .executeTakeFirst();
  if (!row) throw notFound(`Environment '${slug}' of the application's project`);
  return row.id;
}
