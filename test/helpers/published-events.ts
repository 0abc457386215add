import { sql, type Kysely } from 'kysely';
import type { Database } from '../../src/platform/db/schema.js';

export interface PublishedEvent {
  event: string;
  data: Record<string, unknown>;
}

/**
 * Events an organization published, those named `event` or all: still in the outbox, or already fanned out to a
 * subscription. The dispatcher moves them at any moment and drops those nobody subscribed to, so a test that reads
 * them subscribes to what it expects (a delivery counts once per subscription). One statement reads both tables,
 * so an event moving between them is seen exactly once; the oldest come first.
 */
export async function publishedEvents(db: Kysely<Database>, organizationId: string, event?: string): Promise<PublishedEvent[]> {
  const named = event === undefined ? sql`TRUE` : sql`event = ${event}`;
  const { rows } = await sql<PublishedEvent>`
    SELECT event, data FROM (
      SELECT id AS queued, NULL::uuid AS delivery, event, data FROM webhook_outbox WHERE organization_id = ${organizationId}
      UNION ALL
      SELECT NULL, d.id, d.event, d.payload -> 'data' FROM webhook_deliveries d
        JOIN webhooks w ON w.id = d.webhook_id WHERE w.organization_id = ${organizationId}
    ) published WHERE ${named} ORDER BY queued NULLS FIRST, delivery`.execute(db);
  return rows;
}
