import type { Db } from '../../platform/db/database.js';
import { notFound } from '../../platform/errors.js';

/** The environment a request names (id or slug, in the application's project); production when none. */
export async function chosenEnvironmentId(db: Db, applicationId: string, environment: string | undefined): Promise<string> {
  if (!environment) {
    // The project's production environment (the one named `production` first).
    const production = await db
      .selectFrom('environments as e')
      .innerJoin('applications as a', 'a.project_id', 'e.project_id')
      .select('e.id')
      .where('a.id', '=', applicationId)
      .where('e.env_type', '=', 'production')
      .orderBy((eb) => eb.case().when('e.slug', '=', 'production').then(0).else(1).end())
      .orderBy('e.created_at')
      .executeTakeFirst();
    if (!production) throw notFound('Production environment of the application');
    return production.id;
  }
  const isUuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(environment);
  const row = await db
    .selectFrom('environments as e')
    .innerJoin('applications as a', 'a.project_id', 'e.project_id')
    .select('e.id')
    .where('a.id', '=', applicationId)
    .where((eb) => (isUuid ? eb.or([eb('e.id', '=', environment), eb('e.slug', '=', environment)]) : eb('e.slug', '=', environment)))
    .executeTakeFirst();
  if (!row) throw notFound(`Environment '${environment}'`);
  return row.id;
}
