import type { Db } from '../../platform/db/database.js';
import type { ProcessCounts, ProcessPodClasses } from '../../platform/db/schema.js';

/**
 * The process counts and pod classes a service runs with in an environment: the
 * application's own settings (what `/applications/{id}/scale` changes) overlaid by the
 * environment's overrides. Releases freeze these, so every environment scales on its own.
 */
export async function effectiveProcessSettings(
  db: Db,
  applicationId: string,
  environmentId: string,
): Promise<{ process_counts: ProcessCounts; process_pod_classes: ProcessPodClasses }> {
  const row = await db
    .selectFrom('applications as a')
    .leftJoin('environment_services as es', (j) => j.onRef('es.application_id', '=', 'a.id').on('es.environment_id', '=', environmentId))
    .select(['a.process_counts', 'a.process_pod_classes', 'es.process_counts as env_counts', 'es.process_pod_classes as env_pod_classes'])
    .where('a.id', '=', applicationId)
    .executeTakeFirst();
  if (!row) return { process_counts: {}, process_pod_classes: {} };
  return {
    process_counts: { ...row.process_counts, ...(row.env_counts ?? {}) },
    process_pod_classes: { ...row.process_pod_classes, ...(row.env_pod_classes ?? {}) },
  };
}
