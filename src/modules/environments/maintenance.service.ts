import type { Static } from 'typebox';
import type { Db } from '../../platform/db/database.js';
import { iso } from '../../platform/http/schemas.js';
import { publishWebhookEvent } from '../../platform/webhook-events.js';
import { requireProtectedEnvironmentAdmin } from '../../platform/access/environment-protection.js';
import type { OrganizationScope } from '../organizations/index.js';
import { DEFAULT_RETRY_AFTER_SECONDS, type MaintenanceBody } from './maintenance.schemas.js';

/**
 * Maintenance mode per environment: a row in `environment_maintenance` makes every edge answer
 * the environment's applications (all their names) with a 503 page; the instances keep running.
 * Edges read it with custom domains (EdgeDirectory), so it outlives a restart of the API.
 */
export class MaintenanceService {
  constructor(
    private readonly db: Db,
    private readonly scope: OrganizationScope,
    /** Makes this process's edge follow at once (other edge processes reload within seconds). */
    private readonly edgeChanged: () => Promise<void> = async () => {},
  ) {}

  async get(userId: string, ws: string, projectSlug: string, envSlug: string) {
    const { environment } = await this.scope.environment(userId, ws, projectSlug, envSlug);
    return this.describe(environment.id, environment.slug);
  }

  async set(userId: string, ws: string, projectSlug: string, envSlug: string, input: Static<typeof MaintenanceBody>) {
    const { organization, project, environment } = await this.scope.environment(userId, ws, projectSlug, envSlug);
    await requireProtectedEnvironmentAdmin(this.db, userId, { environmentId: environment.id }, 'its maintenance mode');
    await this.db.transaction().execute(async (tx) => {
      if (input.enabled) {
        const row = {
          environment_id: environment.id,
          message: input.message ?? null,
          retry_after: input.retry_after ?? DEFAULT_RETRY_AFTER_SECONDS,
          enabled_by: userId,
        };
        await tx
          .insertInto('environment_maintenance')
          .values(row)
          .onConflict((oc) =>
            oc.column('environment_id').doUpdateSet({ message: row.message, retry_after: row.retry_after, enabled_by: userId }),
          )
          .execute();
      } else {
        await tx.deleteFrom('environment_maintenance').where('environment_id', '=', environment.id).execute();
      }
      await publishWebhookEvent(tx, {
        organizationId: organization.id,
        projectId: project.id,
        event: input.enabled ? 'maintenance.enabled' : 'maintenance.disabled',
        data: { project: project.slug, environment: environment.slug, environment_id: environment.id, by: userId },
      });
    });
    await this.edgeChanged();
    return this.describe(environment.id, environment.slug);
  }

  private async describe(environmentId: string, slug: string) {
    const row = await this.db
      .selectFrom('environment_maintenance as m')
      .leftJoin('users as u', 'u.id', 'm.enabled_by')
      .select(['m.message', 'm.retry_after', 'm.enabled_at', 'u.username'])
      .where('m.environment_id', '=', environmentId)
      .executeTakeFirst();
    return {
      environment: slug,
      enabled: row !== undefined,
      message: row?.message ?? null,
      retry_after: row?.retry_after ?? null,
      enabled_by: row?.username ?? null,
      enabled_at: row ? iso(row.enabled_at) : null,
    };
  }
}
