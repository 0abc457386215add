import { sql } from 'kysely';
import type { Db } from './db/database.js';

/**
 * The events outbound webhooks can subscribe to. The pipeline's (build, release, deployment,
 * rollback, scale, a guard's automatic rollback, previews) are published by the database itself: every application event becomes
 * webhook events in the transaction that recorded it (trigger `slipway_webhook_event`,
 * migration 0012). Other modules publish theirs with `publishWebhookEvent`.
 */
export const WEBHOOK_EVENTS = [
  'build.started',
  'build.succeeded',
  'build.failed',
  'release.started',
  'release.succeeded',
  'release.failed',
  'deployment.started',
  'deployment.succeeded',
  'deployment.failed',
  'deployment.rolled_back',
  'rollback.started',
  'rollback.succeeded',
  'rollback.failed',
  'scale.changed',
  /** An application was deleted (`application`: id, slug, name; `by`). */
  'application.deleted',
  'preview.created',
  'preview.deleted',
  /** A running instance exited on its own (it is restarted): `instance`, `last_exit`, `restart_count` (migration 0036). */
  'instance.crashed',
  /** A crash that followed the instance's third restart: sent once per instance (migration 0048). */
  'instance.crash_loop',
  /** A crash by the kernel's OOM killer (`last_exit` starts with `OOM`; migration 0048). */
  'instance.oom',
  // Add-ons (src/modules/addons).
  'addon.created',
  'addon.attached',
  'addon.detached',
  'addon.resized',
  'addon.deleted',
  'addon.undeleted',
  'addon.credentials_rotated',
  /** Backups of Postgres add-ons: a fork restored, a backup or a restore drill failed (`detail`). */
  'addon.restored',
  'addon.backup_failed',
  'addon.restore_drill_failed',
  /** Persistent volumes (src/modules/volumes): `volume_id`, `name`, `application_id`, `mount_path`, `size_mib`. */
  'volume.created',
  'volume.resized',
  'volume.deleted',
  /** A volume of a deleted application mounted by another one of the organization. */
  'volume.attached',
  /** An environment's maintenance mode turned on or off (issue 33): `environment`, `by`. */
  'maintenance.enabled',
  'maintenance.disabled',
  /** An alert rule (src/modules/alerts) fired or resolved: `rule`, `metric`, `value`, `threshold`, `message`. */
  'alert.firing',
  'alert.resolved',
  /** A domain's certificate is close to expiry and not renewed (14, 7 and 1 days before): `hostname`, `days_left`. */
  'certificate.expiring',
  /** An organization's measured disk use reached 80% or 95% of its quota: `percent`, `used_bytes`, `quota_bytes`. */
  'quota.near',
] as const;

export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

export const PREVIEW_CREATED: WebhookEvent = 'preview.created';
export const PREVIEW_DELETED: WebhookEvent = 'preview.deleted';

/** The channel that wakes the webhook dispatcher when the outbox has events. */
export const WEBHOOKS_CHANNEL = 'slipway_webhooks';

/**
 * Publishes an event to the organization's webhooks, in the caller's transaction (pass
 * the transaction as `db`): it is delivered only if that transaction commits.
 */
export async function publishWebhookEvent(
  db: Db,
  event: { organizationId: string; projectId?: string | null; event: WebhookEvent; data: Record<string, unknown> },
): Promise<void> {
  const inserted = await sql`
    INSERT INTO webhook_outbox (organization_id, project_id, event, data)
    SELECT ${event.organizationId}::uuid, ${event.projectId ?? null}::uuid, ${event.event}, ${JSON.stringify(event.data)}::jsonb
    WHERE EXISTS (SELECT 1 FROM webhooks WHERE organization_id = ${event.organizationId}::uuid)
       OR EXISTS (SELECT 1 FROM notification_channels WHERE organization_id = ${event.organizationId}::uuid)`.execute(db);
  if (inserted.numAffectedRows) await sql`SELECT pg_notify(${WEBHOOKS_CHANNEL}, '')`.execute(db);
}
