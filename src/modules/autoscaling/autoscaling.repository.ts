import { mergeProcessCounts } from '../applications/index.js';
import { mergeServiceProcessCounts } from '../environments/index.js';
import { sql, type Selectable } from 'kysely';
import type { Db } from '../../platform/db/database.js';
import type { AutoscalePoliciesTable, ProcessDefinitions } from '../../platform/db/schema.js';

export type PolicyRow = Selectable<AutoscalePoliciesTable>;

export interface PolicyValues {
  min_count: number;
  max_count: number;
  target_cpu_percent: number | null;
  target_rps: number | null;
  cooldown_seconds: number;
}

export class AutoscalingRepository {
  constructor(private readonly db: Db) {}

  list(applicationId: string, environmentId: string | null) {
    let q = this.db.selectFrom('autoscale_policies').selectAll().where('application_id', '=', applicationId);
    if (environmentId) q = q.where('environment_id', '=', environmentId);
    return q.orderBy('process_type').execute();
  }

  /** Creates or replaces the policy of a process type (its evaluation state starts over). */
  upsert(id: string, applicationId: string, environmentId: string, processType: string, values: PolicyValues) {
    return this.db
      .insertInto('autoscale_policies')
      .values({ id, application_id: applicationId, environment_id: environmentId, process_type: processType, ...values })
      .onConflict((oc) =>
        oc.columns(['application_id', 'environment_id', 'process_type']).doUpdateSet({
          ...values,
          evaluated_at: null,
          requests_minute: null,
          requests_seen: null,
          updated_at: sql`now()`,
        }),
      )
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  async remove(applicationId: string, environmentId: string, processType: string): Promise<boolean> {
    const r = await this.db
      .deleteFrom('autoscale_policies')
      .where('application_id', '=', applicationId)
      .where('environment_id', '=', environmentId)
      .where('process_type', '=', processType)
      .executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  /** The policies of these application environments (`applicationId/environmentId` keys). */
  async forEnvironments(keys: Array<{ applicationId: string; environmentId: string }>): Promise<PolicyRow[]> {
    if (keys.length === 0) return [];
    const rows = await this.db
      .selectFrom('autoscale_policies')
      .selectAll()
      .where(
        'application_id',
        'in',
        keys.map((k) => k.applicationId),
      )
      .execute();
    const wanted = new Set(keys.map((k) => `${k.applicationId}/${k.environmentId}`));
    return rows.filter((r) => wanted.has(`${r.application_id}/${r.environment_id}`));
  }

  /**
   * Takes the policy for this sampling interval. The sampler already hands each sample to
   * one worker (the one whose row was stored); this guards the policy against a second
   * evaluation within half an interval all the same (e.g. two samplers on one database).
   */
  async claim(policyId: string, sampledAt: Date, intervalSeconds: number): Promise<(PolicyRow & { db_now: Date }) | undefined> {
    // Timed by the samples themselves (not by when this statement runs), so a slow sample cannot make the next one look early.
    const earliest = new Date(sampledAt.getTime() - intervalSeconds * 500);
    return (
      this.db
        .updateTable('autoscale_policies')
        .set({ evaluated_at: sampledAt })
        .where('id', '=', policyId)
        .where((eb) => eb.or([eb('evaluated_at', 'is', null), eb('evaluated_at', '<=', earliest)]))
        // The database's clock for the cooldown: `last_scaled_at` is written by it too.
        .returning(sql<Date>`now()`.as('db_now'))
        .returningAll()
        .executeTakeFirst()
    );
  }

  /** Requests the edge counted for the process type in the minutes from `sinceMinute` on. */
  async requestsSince(applicationId: string, environmentId: string, processType: string, sinceMinute: Date): Promise<number> {
    const row = await this.db
      .selectFrom('request_stats')
      .select((eb) => eb.fn.coalesce(eb.fn.sum<string>('requests'), sql<string>`0`).as('n'))
      .where('application_id', '=', applicationId)
      .where('environment_id', '=', environmentId)
      .where('process_type', '=', processType)
      .where('minute', '>=', sinceMinute)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  rememberRequests(policyId: string, minute: Date, seen: number) {
    return this.db
      .updateTable('autoscale_policies')
      .set({ requests_minute: minute, requests_seen: seen })
      .where('id', '=', policyId)
      .execute();
  }

  /** The process types of the release now serving the environment (null: nothing deployed). */
  async servingProcesses(applicationId: string, environmentId: string): Promise<ProcessDefinitions | null> {
    const row = await this.db
      .selectFrom('deployments as d')
      .innerJoin('releases as r', 'r.id', 'd.release_id')
      .select('r.processes')
      .where('d.application_id', '=', applicationId)
      .where('d.environment_id', '=', environmentId)
      .where('d.status', '=', 'complete')
      .orderBy('d.finished_at', 'desc')
      .orderBy('d.created_at', 'desc')
      .limit(1)
      .executeTakeFirst();
    return row ? (row.processes ?? {}) : null;
  }

  /**
   * Sets the count of one process type and records why, in one transaction: in the
   * production environment the application's own count (what `/scale` sets), elsewhere the
   * environment's override. The scale event and an application event go with it.
   */
  async applyCount(
    policy: PolicyRow,
    isProduction: boolean,
    change: { id: string; from: number; to: number; reason: string; metric: Record<string, unknown> },
  ): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      const counts = { [policy.process_type]: change.to };
      if (isProduction) await mergeProcessCounts(trx, policy.application_id, counts);
      else await mergeServiceProcessCounts(trx, policy.environment_id, policy.application_id, counts);
      await trx
        .insertInto('scale_events')
        .values({
          id: change.id,
          application_id: policy.application_id,
          environment_id: policy.environment_id,
          process_type: policy.process_type,
          from_count: change.from,
          to_count: change.to,
          reason: change.reason,
          metric: JSON.stringify(change.metric),
        })
        .execute();
      await trx
        .updateTable('autoscale_policies')
        .set({ last_scaled_at: sql`now()` })
        .where('id', '=', policy.id)
        .execute();
      const data = JSON.stringify({
        environment_id: policy.environment_id,
        process_type: policy.process_type,
        from: change.from,
        to: change.to,
        reason: change.reason,
      });
      await sql`SELECT slipway_record_event(${policy.application_id}::uuid, 'autoscale.scaled', ${change.id}, 'scaled', ${data}::jsonb)`.execute(
        trx,
      );
    });
  }

  countEvents(applicationId: string, environmentId: string | null) {
    let q = this.db
      .selectFrom('scale_events')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('application_id', '=', applicationId);
    if (environmentId) q = q.where('environment_id', '=', environmentId);
    return q.executeTakeFirstOrThrow().then((r) => Number(r.n));
  }

  events(applicationId: string, environmentId: string | null, limit: number, offset: number) {
    let q = this.db.selectFrom('scale_events').selectAll().where('application_id', '=', applicationId);
    if (environmentId) q = q.where('environment_id', '=', environmentId);
    return q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).offset(offset).execute();
  }
}
