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
