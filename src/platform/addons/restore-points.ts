import { sql } from 'kysely';
import type { SecretBox } from '../crypto/secret-box.js';
import type { Db } from '../db/database.js';
import { openCredentials } from './credentials.js';
import { adminClient } from './servers.js';

/** A named point in a Postgres add-on's WAL, made before a release command ran (a fork can be restored to it). */
export interface RestorePoint {
  addon_id: string;
  addon: string;
  name: string;
  lsn: string;
  created: string;
}

/**
 * Before a release command (migrations) of an environment runs: a named restore point
 * (`pg_create_restore_point`) on each running Postgres add-on attached to it, recorded on the
 * release (`release_metadata.restore_points`, the first deployment's: a later redeploy of the
 * same release keeps them). Names start with the time in ms (`slipway-<ms>-v<version>`), which
 * picks the base backup a restore to it starts from. An add-on that does not run is skipped
 * (and named); one that runs but refuses fails the deployment, before the migration.
 */
export async function recordRestorePoints(
  db: Db,
  secrets: SecretBox,
  release: { id: string; application_id: string; environment_id: string; version: number },
  /** The runtime's own way to reach the add-on (a cluster's: through its pod); absent: its loopback port. */
  remote?: (addon: { id: string; name: string; organizationSlug: string }, name: string) => Promise<string>,
): Promise<{ points: RestorePoint[]; skipped: string[] }> {
  const addons = await db
    .selectFrom('addon_attachments as t')
    .innerJoin('addons as a', 'a.id', 't.addon_id')
    .innerJoin('organizations as o', 'o.id', 'a.organization_id')
    .select(['a.id', 'a.name', 'a.port', 'a.status', 'a.credentials_sealed', 'o.slug'])
    .where('t.application_id', '=', release.application_id)
    .where('t.environment_id', '=', release.environment_id)
    .where('a.kind', '=', 'postgres')
    .where('a.deleted_at', 'is', null)
    .orderBy('a.name')
    .execute();
  const points: RestorePoint[] = [];
  const skipped: string[] = [];
  for (const addon of addons) {
    if (addon.status !== 'running') {
      skipped.push(addon.name);
      continue;
    }
    const name = `slipway-${Date.now()}-v${release.version}`;
    if (remote) {
      try {
        const lsn = await remote({ id: addon.id, name: addon.name, organizationSlug: addon.slug }, name);
        points.push({ addon_id: addon.id, addon: addon.name, name, lsn, created: new Date().toISOString() });
        continue;
      } catch (err) {
        throw new Error(`could not record a restore point on add-on '${addon.name}' before the release command: ${(err as Error).message}`);
      }
    }
    const client = adminClient(addon.port, openCredentials(secrets, addon.credentials_sealed), 'postgres');
    try {
      await client.connect();
      const { rows } = await client.query<{ lsn: string }>('SELECT pg_catalog.pg_create_restore_point($1::text)::text AS lsn', [name]);
      points.push({ addon_id: addon.id, addon: addon.name, name, lsn: rows[0]!.lsn, created: new Date().toISOString() });
    } catch (err) {
      throw new Error(`could not record a restore point on add-on '${addon.name}' before the release command: ${(err as Error).message}`);
    } finally {
      await client.end().catch(() => {});
    }
  }
  if (points.length > 0)
    await sql`UPDATE releases SET release_metadata = coalesce(release_metadata, '{}'::jsonb) || jsonb_build_object('restore_points', ${JSON.stringify(points)}::jsonb)
      WHERE id = ${release.id} AND NOT coalesce(release_metadata, '{}'::jsonb) ? 'restore_points'`.execute(db);
  return { points, skipped };
}
