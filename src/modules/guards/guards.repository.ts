import { sql } from 'kysely';
import type { Db } from '../../platform/db/database.js';
import type { GuardMeasures, GuardSettings, GuardStatus, RequestCounts } from '../../platform/db/schema.js';

export class GuardsRepository {
  constructor(private readonly db: Db) {}

  settings(applicationId: string, environmentId: string) {
    return this.db
      .selectFrom('application_guards')
      .selectAll()
      .where('application_id', '=', applicationId)
      .where('environment_id', '=', environmentId)
      .executeTakeFirst();
  }

  saveSettings(applicationId: string, environmentId: string, s: GuardSettings) {
    const values = { application_id: applicationId, environment_id: environmentId, ...s };
    return this.db
      .insertInto('application_guards')
      .values(values)
      .onConflict((oc) => oc.columns(['application_id', 'environment_id']).doUpdateSet({ ...s, updated_at: sql`now()` }))
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  async deleteSettings(applicationId: string, environmentId: string): Promise<boolean> {
    const r = await this.db
      .deleteFrom('application_guards')
      .where('application_id', '=', applicationId)
      .where('environment_id', '=', environmentId)
      .executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  watching(limit = 100) {
    return this.db
      .selectFrom('deployment_guards')
      .selectAll()
      .where('status', '=', 'watching')
      .orderBy('watch_until')
      .limit(limit)
      .execute();
  }

  /** The edge's counters of the environment from the minute the watch started on. */
  async countsSince(applicationId: string, environmentId: string, startedAt: Date): Promise<RequestCounts> {
    const { rows } = await sql<{ counts: RequestCounts }>`
      SELECT slipway_request_counts(${applicationId}, ${environmentId}, date_trunc('minute', ${startedAt}::timestamptz), 'infinity') AS counts`.execute(
      this.db,
    );
    return rows[0]!.counts;
  }

  /** Crash restarts of the deployment's instances. */
  async restarts(deploymentId: string): Promise<number> {
    const row = await this.db
      .selectFrom('instances')
      .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('restart_count'), eb.val(0)).as('n'))
      .where('deployment_id', '=', deploymentId)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** A later deployment of the environment (queued, running or done) ends this one's watch. */
  async superseded(deploymentId: string, applicationId: string, environmentId: string): Promise<boolean> {
    const row = await this.db
      .selectFrom('deployments')
      .select('id')
      .where('application_id', '=', applicationId)
      .where('environment_id', '=', environmentId)
      .where('id', '>', deploymentId)
      .where('status', 'in', ['queued', 'deploying', 'complete'])
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }

  recordMeasures(deploymentId: string, measures: GuardMeasures) {
    return this.db
      .updateTable('deployment_guards')
      .set({ measures: JSON.stringify(measures), checked_at: sql`now()` })
      .where('deployment_id', '=', deploymentId)
      .where('status', '=', 'watching')
      .execute();
  }

  /** Ends a watch with its verdict; false when another worker ended it first. */
  async settle(
    deploymentId: string,
    status: Exclude<GuardStatus, 'watching'>,
    measures: GuardMeasures | null,
    breach: string | null = null,
  ): Promise<boolean> {
    const r = await this.db
      .updateTable('deployment_guards')
      .set({
        status,
        breach,
        checked_at: sql`now()`,
        ...(measures ? { measures: JSON.stringify(measures) } : {}),
      })
      .where('deployment_id', '=', deploymentId)
      .where('status', '=', 'watching')
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  rolledBackBy(deploymentId: string, rollbackDeploymentId: string) {
    return this.db
      .updateTable('deployment_guards')
      .set({ status: 'rolled_back', rollback_deployment_id: rollbackDeploymentId })
      .where('deployment_id', '=', deploymentId)
      .execute();
  }
}
