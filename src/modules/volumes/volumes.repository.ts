import type { Insertable, Updateable } from 'kysely';
import type { Db } from '../../platform/db/database.js';
import type { VolumesTable } from '../../platform/db/schema.js';

export class VolumesRepository {
  constructor(private readonly db: Db) {}

  withDb(db: Db) {
    return new VolumesRepository(db);
  }

  /** An application's volumes (every environment's, or one's), with the environment's slug. */
  list(applicationId: string, environmentId?: string) {
    let q = this.db
      .selectFrom('volumes as v')
      .leftJoin('environments as e', 'e.id', 'v.environment_id')
      .selectAll('v')
      .select('e.slug as environment')
      .where('v.application_id', '=', applicationId);
    if (environmentId) q = q.where('v.environment_id', '=', environmentId);
    return q.orderBy('e.slug').orderBy('v.name').execute();
  }

  /** One volume by id, with its environment's slug (null once that is deleted). */
  byId(id: string) {
    return this.db
      .selectFrom('volumes as v')
      .leftJoin('environments as e', 'e.id', 'v.environment_id')
      .selectAll('v')
      .select('e.slug as environment')
      .where('v.id', '=', id)
      .executeTakeFirst();
  }

  /** The organization's volumes whose application or environment was deleted (their data stays). */
  detached(organizationId: string) {
    return this.db
      .selectFrom('volumes as v')
      .leftJoin('environments as e', 'e.id', 'v.environment_id')
      .selectAll('v')
      .select('e.slug as environment')
      .where('v.organization_id', '=', organizationId)
      .where((eb) => eb.or([eb('v.application_id', 'is', null), eb('v.environment_id', 'is', null)]))
      .orderBy('v.name')
      .orderBy('v.id')
      .execute();
  }

  insert(row: Insertable<VolumesTable>) {
    return this.db.insertInto('volumes').values(row).returningAll().executeTakeFirstOrThrow();
  }

  update(id: string, changes: Updateable<VolumesTable>) {
    return this.db
      .updateTable('volumes')
      .set({ ...changes, updated_at: new Date() })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  delete(id: string) {
    return this.db.deleteFrom('volumes').where('id', '=', id).execute();
  }
}
