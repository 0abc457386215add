import type { Db } from '../db/database.js';
import type { PlanVolume } from '../runtime/application-runtime.js';

/** The volumes an application environment's instances mount (a read for the workload plan). */
export async function planVolumes(db: Db, applicationId: string, environmentId: string): Promise<PlanVolume[]> {
  const rows = await db
    .selectFrom('volumes')
    .select(['id', 'name', 'process_type', 'mount_path', 'size_mib'])
    .where('application_id', '=', applicationId)
    .where('environment_id', '=', environmentId)
    .orderBy('name')
    .execute();
  return rows.map((r) => ({ id: r.id, name: r.name, processType: r.process_type, mountPath: r.mount_path, sizeMiB: r.size_mib }));
}
