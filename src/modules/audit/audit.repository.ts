import type { Db } from '../../platform/db/database.js';
import type { AuditQuery } from './audit.schemas.js';

export class AuditRepository {
  constructor(private readonly db: Db) {}

  /** A page of entries, newest first; `organizationId` undefined: every organization's. */
  async page(filter: AuditQuery & { organizationId?: string }, limit: number, offset: number) {
    let query = this.db.selectFrom('audit_log');
    if (filter.organizationId !== undefined) query = query.where('organization_id', '=', filter.organizationId);
    if (filter.actor) {
      const actor = filter.actor;
      query = query.where((eb) => eb.or([eb('actor_username', '=', actor), eb(eb.cast('actor_user_id', 'text'), '=', actor)]));
    }
    if (filter.resource_type) query = query.where('resource_type', '=', filter.resource_type);
    if (filter.resource_id) query = query.where('resource_id', '=', filter.resource_id);
    if (filter.since) query = query.where('at', '>=', new Date(filter.since));
    if (filter.until) query = query.where('at', '<', new Date(filter.until));
    const [rows, count] = await Promise.all([
      query.selectAll().orderBy('id', 'desc').limit(limit).offset(offset).execute(),
      query.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
    ]);
    return { rows, total: Number(count.n) };
  }

  /** After the response: what only the response knows (a created resource's id and organization). */
  async complete(rowId: number, resourceId: string | null, organizationId: string | null, created: boolean) {
    await this.db
      .updateTable('audit_log')
      .set((eb) => ({
        resource_id: created && resourceId ? eb.val(resourceId) : eb.fn.coalesce('resource_id', eb.val(resourceId)),
        organization_id: eb.fn.coalesce('organization_id', eb.val(organizationId)),
      }))
      .where('id', '=', rowId)
      .execute();
  }
}
