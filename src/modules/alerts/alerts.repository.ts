import { sql, type Selectable } from 'kysely';
import type { Db } from '../../platform/db/database.js';
import type { AlertRulesTable } from '../../platform/db/schema.js';
import type { AlertMetric, AlertState, Counters, Sample } from './alert-state.js';

export interface AlertRuleRow extends Omit<
  Selectable<AlertRulesTable>,
  'metric' | 'state' | 'counters' | 'samples' | 'created_by' | 'updated_at'
> {
  metric: AlertMetric;
  state: AlertState;
  counters: Counters | null;
  samples: Sample[];
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

const isUuid = (s: string) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s);

/** A rule with the slugs and project its views and events name. */
const rules = (db: Db) =>
  db
    .selectFrom('alert_rules as r')
    .leftJoin('applications as a', 'a.id', 'r.application_id')
    .leftJoin('environments as e', 'e.id', 'r.environment_id')
    .select([
      'r.id',
      'r.organization_id',
      'r.application_id',
      'r.environment_id',
      'r.name',
      'r.metric',
      'r.threshold',
      'r.window_seconds',
      'r.for_seconds',
      'r.min_requests',
      'r.state',
      'r.state_since',
      'r.last_value',
      'r.evaluated_at',
      'r.counters_from',
      'r.counters',
      'r.samples',
      'r.silenced_until',
      'r.pattern',
      'r.ignore_case',
      'r.created_at',
      'a.slug as application_slug',
      'e.slug as environment_slug',
      'a.project_id',
    ])
    .$castTo<AlertRuleRow>();

/** Judged at least `seconds` ago (or never): due for the next evaluation. */
const dueAfter = (seconds: number) => sql<boolean>`(r.evaluated_at IS NULL OR r.evaluated_at <= now() - make_interval(secs => ${seconds}))`;

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
    pattern: string | null;
    ignore_case: boolean;
    created_by: string;
  }): Promise<boolean> {
    const r = await this.db
      .insertInto('alert_rules')
      .values(row)
      .onConflict((oc) => oc.columns(['organization_id', 'name']).doNothing())
      .executeTakeFirst();
    return Number(r.numInsertedOrUpdatedRows ?? 0) > 0;
  }

  async list(organizationId: string): Promise<AlertRuleRow[]> {
    return rules(this.db).where('r.organization_id', '=', organizationId).orderBy('r.name').execute();
  }

  /** A rule by id or name, inside the organization. */
  async find(organizationId: string, idOrName: string, db: Db = this.db): Promise<AlertRuleRow | undefined> {
    return rules(db)
      .where('r.organization_id', '=', organizationId)
      .where(isUuid(idOrName) ? 'r.id' : 'r.name', '=', idOrName)
      .executeTakeFirst();
  }

  async delete(id: string): Promise<void> {
    await this.db.deleteFrom('alert_rules').where('id', '=', id).execute();
  }

  async silence(id: string, until: Date | null): Promise<void> {
    await this.db
      .updateTable('alert_rules')
      .set({ silenced_until: until, updated_at: sql`now()` })
      .where('id', '=', id)
      .execute();
  }

  async history(ruleId: string, limit: number): Promise<AlertTransitionRow[]> {
    return this.db
      .selectFrom('alert_transitions')
      .select([sql<string>`id::text`.as('id'), 'from_state', 'to_state', 'value', 'notified', 'at'])
      .where('rule_id', '=', ruleId)
      .orderBy('id', 'desc')
      .limit(limit)
      .execute();
  }

  /** Rules not evaluated in the last `seconds`: the ones this tick judges. */
  async due(seconds: number): Promise<string[]> {
    const rows = await this.db
      .selectFrom('alert_rules as r')
      .select('r.id')
      .where(dueAfter(seconds))
      .orderBy(sql`r.evaluated_at NULLS FIRST`)
      .limit(1000)
      .execute();
    return rows.map((r) => r.id);
  }

  /**
   * Locks a due rule for this transaction; undefined when another process holds it or judged it
   * already (a rule is evaluated once per tick however many processes run the job).
   */
  async claim(trx: Db, id: string, seconds: number): Promise<AlertRuleRow | undefined> {
    return rules(trx).where('r.id', '=', id).where(dueAfter(seconds)).forUpdate('r').skipLocked().executeTakeFirst();
  }

  /**
   * The scope's counters: the edge's since `from` (a whole minute), the instances' crash restarts
   * now and, for a `log_matches` rule, the lines it matched so far.
   */
  async counters(trx: Db, rule: AlertRuleRow, from: Date): Promise<Counters> {
    let stats = trx
      .selectFrom('request_stats as x')
      .innerJoin('applications as a', 'a.id', 'x.application_id')
      .innerJoin('projects as p', 'p.id', 'a.project_id')
      .where('p.organization_id', '=', rule.organization_id)
      .where('x.minute', '>=', from);
    let instances = trx
      .selectFrom('instances as x')
      .innerJoin('applications as a', 'a.id', 'x.application_id')
      .innerJoin('projects as p', 'p.id', 'a.project_id')
      .where('p.organization_id', '=', rule.organization_id);
    if (rule.application_id) {
      stats = stats.where('a.id', '=', rule.application_id);
      instances = instances.where('a.id', '=', rule.application_id);
    }
    if (rule.environment_id) {
      stats = stats.where('x.environment_id', '=', rule.environment_id);
      instances = instances.where('x.environment_id', '=', rule.environment_id);
    }
    const [totals, restarts, matches] = await Promise.all([
      trx
        .with('stats', () => stats.select(['x.requests', 'x.status_classes', 'x.latency_buckets']))
        .selectFrom('stats')
        .select([
          sql<string>`coalesce(sum(requests), 0)`.as('requests'),
          sql<string>`coalesce(sum(status_classes[5]), 0)`.as('errors'),
          // The latency histograms summed bucket by bucket.
          sql<
            string[]
          >`array(SELECT coalesce(sum(v), 0) FROM stats, unnest(stats.latency_buckets) WITH ORDINALITY AS u(v, i) GROUP BY i ORDER BY i)`.as(
            'buckets',
          ),
        ])
        .executeTakeFirstOrThrow(),
      instances.select(sql<string>`coalesce(sum(x.restart_count), 0)`.as('restarts')).executeTakeFirstOrThrow(),
      rule.metric === 'log_matches'
        ? trx.selectFrom('alert_log_matches').select('matches').where('rule_id', '=', rule.id).executeTakeFirst()
        : undefined,
    ]);
    return {
      requests: Number(totals.requests),
      errors: Number(totals.errors),
      buckets: totals.buckets.map(Number),
      restarts: Number(restarts.restarts),
      matches: Number(matches?.matches ?? 0),
    };
  }

  /**
   * `memory_percent`: the largest share of its limit any instance in the scope used in the
   * window's samples; null when there is no sample with a limit in the window.
   */
  async memoryPercent(trx: Db, rule: AlertRuleRow): Promise<number | null> {
    let samples = trx
      .selectFrom('metric_samples as s')
      .innerJoin('applications as a', 'a.id', 's.application_id')
      .innerJoin('projects as p', 'p.id', 'a.project_id')
      .where('p.organization_id', '=', rule.organization_id)
      .where('s.sampled_at', '>', sql<Date>`now() - make_interval(secs => ${rule.window_seconds})`);
    if (rule.application_id) samples = samples.where('s.application_id', '=', rule.application_id);
    if (rule.environment_id) samples = samples.where('s.environment_id', '=', rule.environment_id);
    const row = await samples.select((eb) => eb.fn.max('s.memory_percent_max').as('percent')).executeTakeFirst();
    return row?.percent == null ? null : Math.round(Number(row.percent) * 10) / 10;
  }

  async saveEvaluation(
    trx: Db,
    id: string,
    v: { state: AlertState; changed: boolean; value: number | null; countersFrom: Date; counters: Counters; samples: Sample[] },
  ): Promise<void> {
    await trx
      .updateTable('alert_rules')
      .set({
        evaluated_at: sql`now()`,
        last_value: v.value,
        counters_from: v.countersFrom,
        counters: JSON.stringify(v.counters),
        samples: JSON.stringify(v.samples),
        state: v.state,
        ...(v.changed ? { state_since: sql`now()` } : {}),
      })
      .where('id', '=', id)
      .execute();
  }

  async recordTransition(trx: Db, t: { ruleId: string; from: AlertState; to: AlertState; value: number | null; notified: boolean }) {
    await trx
      .insertInto('alert_transitions')
      .values({ rule_id: t.ruleId, from_state: t.from, to_state: t.to, value: t.value, notified: t.notified })
      .execute();
  }

  /** Whether a rule scoped to the environment (or to its application as a whole) fires, or fired since `since`. */
  async firedSince(applicationId: string, environmentId: string, since: Date): Promise<string | null> {
    const row = await this.db
      .selectFrom('alert_rules as r')
      .select('r.name')
      .where('r.application_id', '=', applicationId)
      .where((eb) => eb.or([eb('r.environment_id', '=', environmentId), eb('r.environment_id', 'is', null)]))
      .where((eb) =>
        eb.or([
          eb('r.state', '=', 'firing'),
          eb.exists(
            eb
              .selectFrom('alert_transitions as t')
              .select(sql`1`.as('one'))
              .whereRef('t.rule_id', '=', 'r.id')
              .where('t.to_state', '=', 'firing')
              .where('t.at', '>=', since),
          ),
        ]),
      )
      .limit(1)
      .executeTakeFirst();
    return row?.name ?? null;
  }

  /** The `log_matches` rules of these applications: what the log counter matches lines against. */
  async logPatternRules(applicationIds: string[]): Promise<LogPatternRule[]> {
    if (applicationIds.length === 0) return [];
    return this.db
      .selectFrom('alert_rules')
      .select(['id', 'application_id', 'environment_id', 'pattern', 'ignore_case'])
      .where('metric', '=', 'log_matches')
      .where('application_id', 'in', applicationIds)
      .$narrowType<{ application_id: string; pattern: string }>()
      .execute();
  }

  /** Adds lines matched to rules' counters (a rule deleted meanwhile is skipped). */
  async addLogMatches(counts: Map<string, number>): Promise<void> {
    if (counts.size === 0) return;
    const ids = [...counts.keys()];
    await this.db
      .insertInto('alert_log_matches')
      .columns(['rule_id', 'matches'])
      .expression((eb) =>
        eb
          .selectFrom('alert_rules')
          .select(['id', sql<number>`(${JSON.stringify(Object.fromEntries(counts))}::jsonb ->> id::text)::bigint`.as('matches')])
          .where('id', 'in', ids),
      )
      .onConflict((oc) => oc.column('rule_id').doUpdateSet({ matches: sql`alert_log_matches.matches + excluded.matches` }))
      .execute();
  }
}

export interface LogPatternRule {
  id: string;
  application_id: string;
  environment_id: string | null;
  pattern: string;
  ignore_case: boolean;
}

/** Whether the application belongs to the organization (a rule names only its own organization's applications). */
export async function applicationOfOrganization(db: Db, organizationId: string, applicationId: string): Promise<boolean> {
  const row = await db
    .selectFrom('applications as a')
    .innerJoin('projects as p', 'p.id', 'a.project_id')
    .select('a.id')
    .where('a.id', '=', applicationId)
    .where('p.organization_id', '=', organizationId)
    .executeTakeFirst();
  return row !== undefined;
}
