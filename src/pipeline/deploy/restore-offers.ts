import type { Db } from '../../platform/db/database.js';

/**
 * What a rollback from `servingVersion` to `targetVersion` leaves as it is: for each Postgres
 * add-on attached to the environment, the restore point recorded before the earliest release being
 * undone ran its release command (`release_metadata.restore_points`, see addons/restore-points.ts).
 * A rollback offers it, never applies it: restoring data is the user's explicit choice.
 */
export async function restoreOffers(db: Db, applicationId: string, environmentId: string, targetVersion: number, servingVersion: number) {
  const undone = await db
    .selectFrom('releases')
    .select(['id', 'version', 'release_metadata'])
    .where('application_id', '=', applicationId)
    .where('environment_id', '=', environmentId)
    .where('version', '>', targetVersion)
    .where('version', '<=', servingVersion)
    .orderBy('version', 'asc')
    .execute();
  const attached = await db
    .selectFrom('addon_attachments as t')
    .innerJoin('addons as a', 'a.id', 't.addon_id')
    .select(['t.id as attachment_id', 't.variable', 'a.id', 'a.name'])
    .where('t.application_id', '=', applicationId)
    .where('t.environment_id', '=', environmentId)
    .where('a.kind', '=', 'postgres')
    .execute();
  const offers = [];
  for (const addon of attached) {
    for (const release of undone) {
      const points = (release.release_metadata?.restore_points ?? []) as Array<{ addon_id: string; name: string }>;
      const point = points.find((p) => p.addon_id === addon.id);
      if (!point) continue;
      offers.push({
        addon: { id: addon.id, name: addon.name },
        attachment_id: addon.attachment_id,
        variable: addon.variable,
        release: { id: release.id, version: release.version },
        restore_point: point.name,
      });
      break;
    }
  }
  return offers;
}
