import { sql } from 'kysely';
import type { Db } from '../db/database.js';
import type { JobPorts } from './job-store.js';

/**
 * What the job loop reads about applications, given to the job store by whoever builds it
 * (src/platform/bootstrap.ts, a test's harness): the store itself never reads these tables.
 */
export function applicationJobPorts(db: Db): JobPorts {
  return {
    async budgetOf(applicationId) {
      const row = await db
        .selectFrom('applications')
        .innerJoin('projects', 'projects.id', 'applications.project_id')
        .innerJoin('organizations', 'organizations.id', 'projects.organization_id')
        .select(['projects.organization_id', 'organizations.created_by'])
        .where('applications.id', '=', applicationId)
        .executeTakeFirst();
      return row ? { organizationId: row.organization_id, ownerId: row.created_by ?? row.organization_id } : null;
    },
    async applicationsHeldElsewhere(workerId, freshSeconds) {
      const rows = await db
        .selectFrom('instances')
        .innerJoin('workers', 'workers.id', 'instances.worker_id')
        .select('instances.application_id')
        .distinct()
        .where('workers.id', '<>', workerId)
        .where('workers.stopped_at', 'is', null)
        .where('workers.heartbeat_at', '>', sql<Date>`now() - make_interval(secs => ${freshSeconds})`)
        .execute();
      return rows.map((r) => r.application_id);
    },
  };
}
