import { sql } from 'kysely';
import type { Db } from '../../platform/db/database.js';
import type { AlertMetric, AlertState, Counters, Sample } from './alert-state.js';

export interface AlertRuleRow {
  id: string;
  organization_id: string;
  application_id: string | null;
  environment_id: string | null;
  name: string;
  metric: AlertMetric;
  threshold: number;
  window_seconds: number;
  for_seconds: number;
  min_requests: number;
  state: AlertState;
  state_since: Date;
  last_value: number | null;
  evaluated_at: Date | null;
  counters_from: Date | null;
  counters: Counters | null;
  samples: Sample[];
  silenced_until: Date | null;
  created_at: Date;
  /** Joined for views and events. */
  application_slug: string | null;
  environment_slug: string | null;
  project_id: string | null;
}

export interface AlertTransitionRow {
  id: string;
  from_state: string;
  to_state: string;
  value: number | null;
  notified: boolean;
  at: Date;
}

const RULE = sql`SELECT r.*, a.slug AS application_slug, e.slug AS environment_slug, a.project_id
  FROM alert_rules r LEFT JOIN applications a ON a.id = r.application_id LEFT JOIN environments e ON e.id = r.environment_id`;

export class AlertsRepository {
  constructor(private readonly db: Db) {}

  async insert(row: {
    id: string;
    organization_id: string;
    application_id: string | null;
    environment_id: string | null;
    name: string;
    metric: AlertMetric;
    threshold: number;
    window_seconds: number;
    for_seconds: number;
    min_requests: number;
    created_by: string;
  }): Promise<boolean> {
    const r = await sql`
      INSERT INTO alert_rules (id, organization_id, application_id, environment_id, name, metric, threshold, window_seconds,
        for_seconds, min_requests, created_by)
      VALUES (${row.id}, ${row.organization_id}, ${row.application_id}, ${row.environment_id}, ${row.name}, ${row.metric},
        ${row.threshold}, ${row.window_seconds}, ${row.for_seconds}, ${row.min_requests}, ${row.created_by})
      ON CONFLICT (organization_id, name) DO NOTHING`.execute(this.db);
    return Number(r.numAffectedRows) > 0;
  }

  async list(organizationId: string): Promise<AlertRuleRow[]> {
    const { rows } = await sql<AlertRuleRow>`${RULE} WHERE r.organization_id = ${organizationId} ORDER BY r.name`.execute(this.db);
    return rows;
  }

  /** A rule by id or name, inside the organization. */
  async find(organizationId: string, idOrName: string, db: Db = this.db): Promise<AlertRuleRow | undefined> {
    const isId = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(idOrName);
    const { rows } = await sql<AlertRuleRow>`${RULE} WHERE r.organization_id = ${organizationId}
      AND ${isId ? sql`r.id = ${idOrName}::uuid` : sql`r.name = ${idOrName}`}`.execute(db);
    return rows[0];
  }

  async delete(id: string): Promise<void> {
    await sql`DELETE FROM alert_rules WHERE id = ${id}`.execute(this.db);
  }

  async silence(id: string, until: Date | null): Promise<void> {
    await sql`UPDATE alert_rules SET silenced_until = ${until}, updated_at = now() WHERE id = ${id}`.execute(this.db);
  }

  async history(ruleId: string, limit: number): Promise<AlertTransitionRow[]> {
    const { rows } = await sql<AlertTransitionRow>`
      SELECT id::text, from_state, to_state, value, notified, at FROM alert_transitions WHERE rule_id = ${ruleId}
      ORDER BY id DESC LIMIT ${limit}`.execute(this.db);
    return rows;
  }

  /** Rules not evaluated in the last `seconds`: the ones this tick judges. */
  async due(seconds: number): Promise<string[]> {
    const { rows } = await sql<{ id: string }>`
      SELECT id FROM alert_rules WHERE evaluated_at IS NULL OR evaluated_at <= now() - make_interval(secs => ${seconds})
      ORDER BY evaluated_at NULLS FIRST LIMIT 1000`.execute(this.db);
    return rows.map((r) => r.id);
  }

  /**
   * Locks a due rule for this transaction; undefined when another process holds it or judged it
   * already (a rule is evaluated once per tick however many processes run the job).
   */
  async claim(trx: Db, id: string, seconds: number): Promise<AlertRuleRow | undefined> {
    const { rows } = await sql<AlertRuleRow>`
      ${RULE} WHERE r.id = ${id} AND (r.evaluated_at IS NULL OR r.evaluated_at <= now() - make_interval(secs => ${seconds}))
      FOR UPDATE OF r SKIP LOCKED`.execute(trx);
    return rows[0];
  }

  /** The scope's counters: the edge's since `from` (a whole minute) and the instances' crash restarts now. */
  async counters(trx: Db, rule: AlertRuleRow, from: Date): Promise<Counters> {
    const scope = sql`p.organization_id = ${rule.organization_id}
      ${rule.application_id ? sql`AND a.id = ${rule.application_id}` : sql``}
      ${rule.environment_id ? sql`AND x.environment_id = ${rule.environment_id}` : sql``}`;
    const { rows } = await sql<{ requests: string; errors: string; buckets: string[]; restarts: string }>`
      WITH stats AS (
        SELECT x.* FROM request_stats x JOIN applications a ON a.id = x.application_id JOIN projects p ON p.id = a.project_id
        WHERE ${scope} AND x.minute >= ${from})
      SELECT (SELECT coalesce(sum(requests), 0) FROM stats) AS requests,
        (SELECT coalesce(sum(status_classes[5]), 0) FROM stats) AS errors,
        array(SELECT coalesce(sum(v), 0) FROM stats, unnest(stats.latency_buckets) WITH ORDINALITY AS u(v, i) GROUP BY i ORDER BY i) AS buckets,
        (SELECT coalesce(sum(x.restart_count), 0) FROM instances x JOIN applications a ON a.id = x.application_id
          JOIN projects p ON p.id = a.project_id WHERE ${scope}) AS restarts`.execute(trx);
    const r = rows[0]!;
    return { requests: Number(r.requests), errors: Number(r.errors), buckets: r.buckets.map(Number), restarts: Number(r.restarts) };
  }

  async saveEvaluation(
    trx: Db,
    id: string,
    v: { state: AlertState; changed: boolean; value: number | null; countersFrom: Date; counters: Counters; samples: Sample[] },
  ): Promise<void> {
    await sql`
      UPDATE alert_rules SET evaluated_at = now(), last_value = ${v.value}, counters_from = ${v.countersFrom},
        counters = ${JSON.stringify(v.counters)}::jsonb, samples = ${JSON.stringify(v.samples)}::jsonb,
        state = ${v.state}, state_since = ${v.changed ? sql`now()` : sql`state_since`}
      WHERE id = ${id}`.execute(trx);
  }

  async recordTransition(trx: Db, t: { ruleId: string; from: AlertState; to: AlertState; value: number | null; notified: boolean }) {
    await sql`INSERT INTO alert_transitions (rule_id, from_state, to_state, value, notified)
      VALUES (${t.ruleId}, ${t.from}, ${t.to}, ${t.value}, ${t.notified})`.execute(trx);
  }

  /** Whether a rule scoped to the environment (or to its application as a whole) fires, or fired since `since`. */
  async firedSince(applicationId: string, environmentId: string, since: Date): Promise<string | null> {
    const { rows } = await sql<{ name: string }>`
      SELECT r.name FROM alert_rules r
      WHERE r.application_id = ${applicationId} AND (r.environment_id = ${environmentId} OR r.environment_id IS NULL)
        AND (r.state = 'firing' OR EXISTS (SELECT 1 FROM alert_transitions t
          WHERE t.rule_id = r.id AND t.to_state = 'firing' AND t.at >= ${since}))
      LIMIT 1`.execute(this.db);
    return rows[0]?.name ?? null;
  }
}

/** Whether the application belongs to the organization (a rule names only its own organization's applications). */
export async function applicationOfOrganization(db: Db, organizationId: string, applicationId: string): Promise<boolean> {
  const { rows } = await sql`SELECT 1 FROM applications a JOIN projects p ON p.id = a.project_id
    WHERE a.id = ${applicationId} AND p.organization_id = ${organizationId}`.execute(db);
  return rows.length > 0;
}
