import type { SecretBox } from '../crypto/secret-box.js';
import type { Db } from '../db/database.js';
import { connectionUrl, openCredentials } from './credentials.js';

/** The loopback ports of the add-ons attached to an application environment: its sandboxes' only way to them. */
export async function attachedAddonPorts(db: Db, applicationId: string, environmentId: string | undefined): Promise<number[]> {
  if (!environmentId) return [];
  const rows = await db
    .selectFrom('addon_attachments as t')
    .innerJoin('addons as a', 'a.id', 't.addon_id')
    .select('a.port')
    .where('t.application_id', '=', applicationId)
    .where('t.environment_id', '=', environmentId)
    .where('a.deleted_at', 'is', null)
    .execute();
  return rows.map((r) => r.port);
}

/** The variables the attachments give an application environment (each a secret URL), for its releases. */
export async function attachedAddonVariables(
  db: Db,
  secrets: SecretBox,
  applicationId: string,
  environmentId: string,
): Promise<Array<{ name: string; value: string; addonId: string }>> {
  const rows = await db
    .selectFrom('addon_attachments as t')
    .innerJoin('addons as a', 'a.id', 't.addon_id')
    .select(['t.variable', 'a.id', 'a.kind', 'a.port', 'a.host', 'a.credentials_sealed'])
    .where('t.application_id', '=', applicationId)
    .where('t.environment_id', '=', environmentId)
    .where('a.deleted_at', 'is', null)
    .orderBy('t.variable')
    .execute();
  return rows.map((r) => ({
    name: r.variable,
    value: connectionUrl(r.kind, r.port, openCredentials(secrets, r.credentials_sealed), r.host),
    addonId: r.id,
  }));
}
