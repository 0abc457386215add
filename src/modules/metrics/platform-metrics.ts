import { sql } from 'kysely';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Db } from '../../platform/db/database.js';
import { loginPasswordChecks } from '../auth/index.js';
import { diskFullErrors, diskSpace } from '../../platform/storage/disk-space.js';
import { backgroundFailureCounts } from '../../platform/observability/background-failures.js';

const CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx'] as const;

/**
 * The platform's Prometheus series. This process's API requests are counted as they happen;
 * everything else (job queue, builds, deployments, instances, the edge's per-application
 * counters) is read from PostgreSQL at scrape time, so any API process answers for the whole
 * platform and a restart loses nothing.
 */
export class PlatformMetrics {
  readonly registry = new Registry();
  private readonly httpRequests: Counter<'method' | 'route' | 'status_class'>;
  private readonly httpDuration: Histogram<'method' | 'route'>;

  constructor(
    private readonly db: Db,
    dataDir?: string,
  ) {
    const registers = [this.registry];
    this.registry.registerMetric(diskFullErrors);
    this.registry.registerMetric(loginPasswordChecks);
    if (dataDir)
      new Gauge({
        name: 'slipway_data_dir_free_bytes',
        help: "Free bytes on DATA_DIR's filesystem (builds, artifacts, logs; the embedded PostgreSQL's data)",
        registers,
        async collect() {
          const space = await diskSpace(dataDir, 0);
          if (space.freeBytes !== null) this.set(space.freeBytes);
        },
      });
    collectDefaultMetrics({ register: this.registry, prefix: 'slipway_process_' });
    // Counted where the failures happen (edge, runtime, audit), in this process.
    new Counter({
      name: 'slipway_background_failures_total',
      help: 'Background work that failed and was left to its next turn (or lost at shutdown), by operation',
      labelNames: ['operation'],
      registers,
      collect() {
        this.reset();
        for (const [operation, count] of backgroundFailureCounts()) this.inc({ operation }, count);
      },
    });
    this.httpRequests = new Counter({
      name: 'slipway_http_requests_total',
      help: 'API requests this process answered',
      labelNames: ['method', 'route', 'status_class'],
      registers,
    });
    this.httpDuration = new Histogram({
      name: 'slipway_http_request_duration_seconds',
      help: 'Time this process took to answer API requests',
      labelNames: ['method', 'route'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    const fromDb = <L extends string>(
      name: string,
      help: string,
      labelNames: L[],
      read: () => Promise<Array<[Record<L, string>, number]>>,
    ) =>
      new Gauge({
        name,
        help,
        labelNames,
        registers,
        async collect() {
          this.reset();
          for (const [labels, value] of await read()) this.set(labels, value);
        },
      });
    fromDb('slipway_jobs', 'Pipeline jobs by kind and state (waiting: created or retry)', ['kind', 'state'], () => this.jobs());
    fromDb('slipway_job_wait_seconds', 'Wait of the jobs started in the last 5 minutes, by kind (avg and max)', ['kind', 'stat'], () =>
      this.jobWaits(),
    );
    fromDb('slipway_builds', 'Images by build status', ['status'], () => this.countBy('images', 'status'));
    fromDb('slipway_deployments', 'Deployments by status', ['status'], () => this.countBy('deployments', 'status'));
    fromDb('slipway_instances', 'Application instances by state', ['state'], () => this.countBy('instances', 'state'));
    fromDb(
      'slipway_app_memory_limit_ratio',
      'Largest share (0..1) of its memory limit one instance of the application environment used, at the latest sample of the last 5 minutes',
      ['application_id', 'application', 'environment'],
      () => this.appMemory(),
    );
    const logMatches = new Counter({
      name: 'slipway_alert_log_matches_total',
      help: 'Runtime log lines each log_matches alert rule matched since it was made',
      labelNames: ['organization', 'rule'],
      registers,
      collect: async () => {
        logMatches.reset();
        for (const [labels, value] of await this.logMatches()) logMatches.inc(labels, value);
      },
    });
    // Counters kept in PostgreSQL by the edge: re-read whole at each scrape.
    const appRequests = new Counter({
      name: 'slipway_app_requests_total',
      help: 'Requests the edge served per application, environment, process type and status class',
      labelNames: ['application_id', 'application', 'environment', 'process_type', 'status_class'],
      registers,
      collect: async () => {
        appRequests.reset();
        for (const [labels, value] of await this.appRequests()) appRequests.inc(labels, value);
      },
    });
  }

  /** Fastify `onResponse`: one API request answered. */
  observeRequest(method: string, route: string | undefined, status: number, seconds: number) {
    const labels = { method, route: route ?? 'unmatched' };
    this.httpRequests.inc({ ...labels, status_class: `${Math.floor(status / 100)}xx` });
    this.httpDuration.observe(labels, seconds);
  }

  async text(): Promise<string> {
    return this.registry.metrics();
  }

  private async countBy(table: 'images' | 'deployments' | 'instances', column: string): Promise<Array<[Record<string, string>, number]>> {
    const { rows } = await sql<{
      key: string;
      n: string;
    }>`SELECT ${sql.ref(column)} AS key, count(*) AS n FROM ${sql.table(table)} GROUP BY 1`.execute(this.db);
    return rows.map((r) => [{ [column]: r.key }, Number(r.n)]);
  }

  /** The pipeline's jobs (the JobStore's table). */
  private async jobs(): Promise<Array<[Record<'kind' | 'state', string>, number]>> {
    const { rows } = await sql<{ kind: string; state: string; n: string }>`
      SELECT kind, CASE WHEN state = 'created' THEN 'waiting' ELSE state END AS state, count(*) AS n
      FROM pipeline_jobs WHERE state IN ('created', 'active') OR completed_on > now() - interval '1 hour' GROUP BY 1, 2`.execute(this.db);
    return rows.map((r) => [{ kind: r.kind, state: r.state }, Number(r.n)]);
  }

  private async jobWaits(): Promise<Array<[Record<'kind' | 'stat', string>, number]>> {
    const { rows } = await sql<{ kind: string; avg: number; max: number }>`
      SELECT kind,
             avg(extract(epoch FROM started_on - created_on))::float8 AS avg, max(extract(epoch FROM started_on - created_on))::float8 AS max
      FROM pipeline_jobs WHERE started_on > now() - interval '5 minutes' GROUP BY 1`.execute(this.db);
    return rows.flatMap((r) => [
      [{ kind: r.kind, stat: 'avg' }, Number(r.avg)],
      [{ kind: r.kind, stat: 'max' }, Number(r.max)],
    ]);
  }

  /** The latest sample with a limit per application environment (the sampler runs every OBSERVABILITY_SAMPLE_SECONDS). */
  private async appMemory(): Promise<Array<[Record<'application_id' | 'application' | 'environment', string>, number]>> {
    const rows = await this.db
      .selectFrom('metric_samples as s')
      .innerJoin('applications as a', 'a.id', 's.application_id')
      .innerJoin('projects as p', 'p.id', 'a.project_id')
      .innerJoin('organizations as o', 'o.id', 'p.organization_id')
      .innerJoin('environments as e', 'e.id', 's.environment_id')
      .distinctOn(['s.application_id', 's.environment_id'])
      .select(['s.application_id', sql<string>`o.slug || '/' || p.slug || '/' || a.slug`.as('application'), 'e.slug as environment'])
      .select('s.memory_percent_max')
      .where('s.sampled_at', '>', sql<Date>`now() - interval '5 minutes'`)
      .where('s.memory_percent_max', 'is not', null)
      .orderBy('s.application_id')
      .orderBy('s.environment_id')
      .orderBy('s.sampled_at', 'desc')
      .execute();
    return rows.map((r) => [
      { application_id: r.application_id, application: r.application, environment: r.environment },
      Number(r.memory_percent_max) / 100,
    ]);
  }

  /** Kept in PostgreSQL by the processes that read the logs: re-read whole at each scrape. */
  private async logMatches(): Promise<Array<[Record<'organization' | 'rule', string>, number]>> {
    const rows = await this.db
      .selectFrom('alert_log_matches as m')
      .innerJoin('alert_rules as r', 'r.id', 'm.rule_id')
      .innerJoin('organizations as o', 'o.id', 'r.organization_id')
      .select(['o.slug as organization', 'r.name as rule', 'm.matches'])
      .execute();
    return rows.map((r) => [{ organization: r.organization, rule: r.rule }, Number(r.matches)]);
  }

  private async appRequests() {
    const { rows } = await sql<{
      application_id: string;
      application: string;
      environment: string;
      process_type: string;
      classes: string[];
    }>`
      SELECT r.application_id, o.slug || '/' || p.slug || '/' || a.slug AS application, e.slug AS environment, r.process_type,
             array(SELECT sum(v)::text FROM request_stats r2, unnest(r2.status_classes) WITH ORDINALITY AS u(v, i)
                   WHERE r2.application_id = r.application_id AND r2.environment_id = r.environment_id AND r2.process_type = r.process_type
                   GROUP BY i ORDER BY i) AS classes
      FROM (SELECT DISTINCT application_id, environment_id, process_type FROM request_stats) r
      JOIN applications a ON a.id = r.application_id JOIN projects p ON p.id = a.project_id
      JOIN organizations o ON o.id = p.organization_id JOIN environments e ON e.id = r.environment_id`.execute(this.db);
    return rows.flatMap((r) =>
      CLASSES.map(
        (status_class, i) =>
          [
            {
              application_id: r.application_id,
              application: r.application,
              environment: r.environment,
              process_type: r.process_type,
              status_class,
            },
            Number(r.classes[i] ?? 0),
          ] as [Record<string, string>, number],
      ),
    );
  }
}
