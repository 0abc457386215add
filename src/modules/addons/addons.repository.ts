import { sql, type Insertable, type Updateable } from 'kysely';
import type { Db } from '../../platform/db/database.js';
import type { AddonAttachmentsTable, AddonKind, AddonsTable } from '../../platform/db/schema.js';

export class AddonsRepository {
  constructor(private readonly db: Db) {}

  withDb(db: Db) {
    return new AddonsRepository(db);
  }

  list(organizationId: string) {
    return this.db.selectFrom('addons').selectAll().where('organization_id', '=', organizationId).orderBy('name').execute();
  }

  findByName(organizationId: string, name: string) {
    return this.db
      .selectFrom('addons')
      .selectAll()
      .where('organization_id', '=', organizationId)
      .where('name', '=', name)
      .executeTakeFirst();
  }

  find(id: string) {
    return this.db.selectFrom('addons').selectAll().where('id', '=', id).executeTakeFirst();
  }

  insert(row: Insertable<AddonsTable>) {
    return this.db.insertInto('addons').values(row).returningAll().executeTakeFirstOrThrow();
  }

  update(id: string, changes: Updateable<AddonsTable>) {
    return this.db
      .updateTable('addons')
      .set({ ...changes, updated_at: new Date() })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  delete(id: string) {
    return this.db.deleteFrom('addons').where('id', '=', id).execute();
  }

  /** Ports taken by add-ons (deleted ones keep theirs until purged). */
  async usedPorts(): Promise<Set<number>> {
    return new Set((await this.db.selectFrom('addons').select('port').execute()).map((r) => r.port));
  }

  purgeable(now: Date) {
    return this.db.selectFrom('addons').select(['id']).where('purge_after', '<=', now).execute();
  }

  attachments(addonIds: string[]) {
    if (addonIds.length === 0) return Promise.resolve([]);
    return this.db
      .selectFrom('addon_attachments as t')
      .innerJoin('applications as a', 'a.id', 't.application_id')
      .innerJoin('environments as e', 'e.id', 't.environment_id')
      .select([
        't.id',
        't.addon_id',
        't.application_id',
        't.environment_id',
        't.variable',
        't.created_at',
        'a.slug as application',
        'e.slug as environment',
      ])
      .where('t.addon_id', 'in', addonIds)
      .orderBy('t.created_at')
      .execute();
  }

  /** The live add-ons of `kind` attached to an application environment, the default variable's first. */
  attachedTo(applicationId: string, environmentId: string, kind: AddonKind, defaultVariable: string) {
    return this.db
      .selectFrom('addon_attachments as t')
      .innerJoin('addons as a', 'a.id', 't.addon_id')
      .selectAll('a')
      .select('t.variable')
      .where('t.application_id', '=', applicationId)
      .where('t.environment_id', '=', environmentId)
      .where('a.kind', '=', kind)
      .where('a.deleted_at', 'is', null)
      .orderBy(sql`t.variable = ${defaultVariable}`, 'desc')
      .orderBy('t.variable')
      .execute();
  }

  insertAttachment(row: Insertable<AddonAttachmentsTable>) {
    return this.db.insertInto('addon_attachments').values(row).returningAll().executeTakeFirstOrThrow();
  }

  deleteAttachment(addonId: string, id: string) {
    return this.db.deleteFrom('addon_attachments').where('addon_id', '=', addonId).where('id', '=', id).returningAll().executeTakeFirst();
  }
}
