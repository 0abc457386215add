import { sql } from 'kysely';
import type { Db } from '../../platform/db/database.js';
import type { DeploymentStatus } from '../../platform/db/schema.js';
import { notFound } from '../../platform/errors.js';
import { iso } from '../../platform/http/schemas.js';
import type { OrganizationAccess } from '../organizations/index.js';
import { OVERVIEW_MAX_APPLICATIONS, type OverviewApplicationView } from './overview.schemas.js';

const BUCKET_SECONDS = 120;
const BUCKETS = 30;
/** A share of 5xx answers over the last few buckets that counts as failing. */
const FAILING_ERROR_SHARE = 0.05;
const RECENT_BUCKETS = 5;

const ORDER = { failing: 0, deploying: 1, healthy: 2, idle: 3 } as const;
const FIRST_PAGE = { page: 1, per_page: OVERVIEW_MAX_APPLICATIONS };

/**
 * The home page's one read: every application of the caller's organizations with its
 * production state (serving release, instances, newest deployment and who asked for it, the
 * last hour of requests and 5xx answers), failing ones first. A fixed number of queries
 * whatever the number of applications.
 */
export class OverviewService {
  constructor(
    private readonly db: Db,
    private readonly access: OrganizationAccess,
  ) {}

  /**
   * One page of the caller's applications (by organization, project and application slug; the first
   * OVERVIEW_MAX_APPLICATIONS unless asked), each with production's state, failing first within the page.
   * `truncated`: more applications follow this page.
   */
  async forUser(userId: string, organizationSlug?: string, window: { page: number; per_page: number } = FIRST_PAGE) {
    let organizationId: string | undefined;
    if (organizationSlug !== undefined) {
      const org = await this.access.findBySlug(organizationSlug);
      if (!org) throw notFound('Organization');
      await this.access.requireMember(userId, org.id);
      organizationId = org.id;
    }
    const apps = await this.page(userId, organizationId, window);
    const truncated = apps.length > window.per_page;
    const shown = apps.slice(0, window.per_page);
    const pairs = shown.filter((a) => a.environment_id !== null).map((a) => ({ app: a.id, env: a.environment_id! }));
    if (pairs.length === 0) return { applications: shown.map((a) => view(a, undefined)), truncated };

    const appIds = pairs.map((p) => p.app);
    const envIds = pairs.map((p) => p.env);
    const latest = shown.flatMap((a) => (a.latest ? [{ ...a.latest, created_at: new Date(a.latest.created_at) }] : []));
    const [instances, traffic, startedBy] = await Promise.all([
      this.instanceCounts(appIds, envIds),
      this.traffic(appIds, envIds),
      this.whoStarted(latest),
    ]);
    // Rows by application and environment, once: a page's 200 applications with 30 buckets each would
    // otherwise be filtered 200 times over 6,000 rows.
    const instancesOf = groupByPair(instances);
    const trafficOf = groupByPair(traffic);
    const applications = shown
      .map((a) =>
        view(a, {
          latest: a.latest
            ? {
                ...a.latest,
                created_at: new Date(a.latest.created_at),
                finished_at: a.latest.finished_at ? new Date(a.latest.finished_at) : null,
              }
            : undefined,
          serving: a.serving,
          instances: instancesOf.get(`${a.id} ${a.environment_id}`) ?? [],
          traffic: trafficOf.get(`${a.id} ${a.environment_id}`) ?? [],
          startedBy,
        }),
      )
      .sort((x, y) => ORDER[x.state] - ORDER[y.state]);
    return { applications, truncated };
  }

  /**
   * The page's applications and one more (by organization, project and application slug: the one more
   * tells whether a next page exists, without counting) with production's newest deployment and serving
   * release, in one statement (issue 35): the page is chosen first, so production, its deployments and
   * releases are looked up (by index) for its rows only, not for every application of an installation of thousands.
   */
  private async page(userId: string, organizationId: string | undefined, window: { page: number; per_page: number }) {
    const { rows } = await sql<OverviewRow>`
      WITH shown AS (
        -- The caller's projects in order (a few thousand rows at most), then each project's applications by
        -- its (project_id, slug) index: the ordered projects let PostgreSQL sort only within a project
        -- (incremental sort) and stop at the page's end, instead of sorting every application first.
        SELECT a.id, a.name, a.slug, p.id AS project_id, p.slug AS project_slug, p.organization_slug, p.organization_id
        FROM (
          SELECT p.id, p.slug, o.slug AS organization_slug, o.id AS organization_id
          FROM projects p
          JOIN organizations o ON o.id = p.organization_id
          JOIN memberships m ON m.organization_id = o.id AND m.user_id = ${userId}
          WHERE ${organizationId === undefined ? sql`true` : sql`o.id = ${organizationId}`}
          ORDER BY o.slug, p.slug
        ) p
        CROSS JOIN LATERAL (SELECT a.id, a.name, a.slug FROM applications a WHERE a.project_id = p.id ORDER BY a.slug) a
        ORDER BY p.organization_slug, p.slug, a.slug
        LIMIT ${window.per_page + 1} OFFSET ${(window.page - 1) * window.per_page}
      )
      SELECT s.id, s.name, s.slug, s.project_slug, s.organization_slug, s.organization_id, e.id AS environment_id,
        (SELECT json_build_object('id', d.id, 'application_id', d.application_id, 'release_id', d.release_id, 'status', d.status,
                                  'rollback_of', d.rollback_of, 'created_at', d.created_at, 'finished_at', d.finished_at,
                                  'version', r.version)
           FROM deployments d JOIN releases r ON r.id = d.release_id
          WHERE d.application_id = s.id AND d.environment_id = e.id
          ORDER BY d.created_at DESC LIMIT 1) AS latest,
        (SELECT r.version FROM deployments d JOIN releases r ON r.id = d.release_id
          WHERE d.application_id = s.id AND d.environment_id = e.id AND d.status = 'complete'
          ORDER BY d.created_at DESC LIMIT 1) AS serving
      FROM shown s
      -- One production per project, chosen as deployments choose it (the one named production first).
      LEFT JOIN LATERAL (
        SELECT pe.id FROM environments pe
        WHERE pe.project_id = s.project_id AND pe.env_type = 'production' AND pe.deleted_at IS NULL
        ORDER BY pe.slug = 'production' DESC, pe.created_at LIMIT 1
      ) e ON true
      ORDER BY s.organization_slug, s.project_slug, s.slug`.execute(this.db);
    return rows;
  }
  private instanceCounts(appIds: string[], envIds: string[]) {
    return this.db
      .selectFrom('instances as i')
      .select(['i.application_id', 'i.environment_id', 'i.state'])
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where(pairFilter('i', appIds, envIds))
      .where('i.state', '!=', 'stopped')
      .groupBy(['i.application_id', 'i.environment_id', 'i.state'])
      .execute();
  }

  /** Requests and 5xx answers per bucket over the last hour (status_classes[5] counts 5xx). */
  private async traffic(appIds: string[], envIds: string[]) {
    const { rows } = await sql<{ application_id: string; environment_id: string; bucket: number; requests: string; errors: string }>`
      SELECT application_id, environment_id,
             floor(extract(epoch FROM now() - minute) / ${BUCKET_SECONDS})::int AS bucket,
             sum(requests)::bigint AS requests, sum(status_classes[5])::bigint AS errors
      FROM request_stats
      WHERE (application_id, environment_id) IN (SELECT * FROM unnest(${appIds}::uuid[], ${envIds}::uuid[]))
        AND minute > now() - make_interval(secs => ${BUCKET_SECONDS * BUCKETS})
      GROUP BY 1, 2, 3`.execute(this.db);
    return rows;
  }

  /**
   * Who asked for each deployment: the audit row of the person's request that started it (a
   * deploy, rollback or promotion naming it, its release or its application, written within seconds of
   * it). None for deployments no request started (a push's chain, a guard, cron).
   */
  private async whoStarted(deployments: Array<{ id: string; application_id: string; release_id: string; created_at: Date }>) {
    if (deployments.length === 0) return new Map<string, string>();
    const { rows } = await sql<{ id: string; username: string }>`
      SELECT DISTINCT ON (d.id) d.id, a.actor_username AS username
      FROM unnest(${deployments.map((d) => d.id)}::uuid[], ${deployments.map((d) => d.application_id)}::uuid[],
                  ${deployments.map((d) => d.release_id)}::uuid[], ${deployments.map((d) => d.created_at)}::timestamptz[])
           AS d(id, application_id, release_id, created_at)
      JOIN audit_log a ON a.resource_id IN (d.id::text, d.application_id::text, d.release_id::text)
           AND a.at BETWEEN d.created_at - interval '10 seconds' AND d.created_at + interval '10 seconds'
           AND NOT a.denied AND a.actor_username IS NOT NULL AND a.action ~ ${STARTING_ACTIONS}
      ORDER BY d.id, abs(extract(epoch FROM a.at - d.created_at))`.execute(this.db);
    return new Map(rows.map((r) => [r.id, r.username]));
  }
}

/** The audit actions (routes) of a request that starts a deployment: a deploy, a rollback or a promotion. */
const STARTING_ACTIONS = '^POST /v1/.*/(deploy|rollback|promote)$';

/** Rows by `application_id environment_id`. */
function groupByPair<R extends { application_id: string; environment_id: string }>(rows: R[]): Map<string, R[]> {
  const groups = new Map<string, R[]>();
  for (const row of rows) {
    const key = `${row.application_id} ${row.environment_id}`;
    const group = groups.get(key);
    if (group) group.push(row);
    else groups.set(key, [row]);
  }
  return groups;
}

function pairFilter(alias: 'd' | 'i', appIds: string[], envIds: string[]) {
  return sql<boolean>`(${sql.ref(`${alias}.application_id`)}, ${sql.ref(`${alias}.environment_id`)}) IN (SELECT * FROM unnest(${appIds}::uuid[], ${envIds}::uuid[]))`;
}

/** A row of the page: `latest` is JSON (its timestamps are strings). */
interface OverviewRow {
  id: string;
  name: string;
  slug: string;
  project_slug: string;
  organization_slug: string;
  organization_id: string;
  environment_id: string | null;
  latest: {
    id: string;
    application_id: string;
    release_id: string;
    status: DeploymentStatus;
    rollback_of: string | null;
    created_at: string;
    finished_at: string | null;
    version: number;
  } | null;
  serving: number | null;
}

interface Production {
  latest:
    | { id: string; version: number; status: DeploymentStatus; rollback_of: string | null; created_at: Date; finished_at: Date | null }
    | undefined;
  serving: number | null;
  instances: Array<{ state: string; n: string }>;
  traffic: Array<{ bucket: number; requests: string; errors: string }>;
  startedBy: Map<string, string>;
}

function view(
  a: { id: string; name: string; slug: string; project_slug: string; organization_slug: string },
  production: Production | undefined,
): OverviewApplicationView {
  const requests = new Array<number>(BUCKETS).fill(0);
  const errors = new Array<number>(BUCKETS).fill(0);
  for (const t of production?.traffic ?? []) {
    // Bucket 0 is the newest; the answer runs oldest first.
    const index = BUCKETS - 1 - Math.min(BUCKETS - 1, Math.max(0, t.bucket));
    requests[index]! += Number(t.requests);
    errors[index]! += Number(t.errors);
  }
  const count = (states: string[]) =>
    (production?.instances ?? []).filter((i) => states.includes(i.state)).reduce((sum, i) => sum + Number(i.n), 0);
  const instances = {
    total: count(['starting', 'healthy', 'running', 'crashed']),
    healthy: count(['healthy', 'running']),
    crashed: count(['crashed']),
  };
  const latest = production?.latest;
  const serving = production?.serving ?? null;

  const problems: string[] = [];
  if (latest && (latest.status === 'error' || latest.status === 'rolled_back')) {
    problems.push(`deployment of v${latest.version} ${latest.status === 'error' ? 'failed' : 'was rolled back by its guard'}`);
  }
  if (instances.crashed > 0) problems.push(`${instances.crashed} instance${instances.crashed === 1 ? '' : 's'} crashed`);
  const recentRequests = requests.slice(-RECENT_BUCKETS).reduce((s, n) => s + n, 0);
  const recentErrors = errors.slice(-RECENT_BUCKETS).reduce((s, n) => s + n, 0);
  if (recentRequests > 0 && recentErrors / recentRequests >= FAILING_ERROR_SHARE) {
    problems.push(
      `${Math.round((100 * recentErrors) / recentRequests)}% of requests failed (5xx) in the last ${(RECENT_BUCKETS * BUCKET_SECONDS) / 60} minutes`,
    );
  }
  const underWay = latest !== undefined && (latest.status === 'queued' || latest.status === 'deploying');
  const state = problems.length > 0 ? 'failing' : underWay ? 'deploying' : serving !== null ? 'healthy' : 'idle';
  return {
    id: a.id,
    name: a.name,
    slug: a.slug,
    organization_slug: a.organization_slug,
    project_slug: a.project_slug,
    state,
    problems,
    serving_release_version: serving,
    instances,
    last_deployment: latest
      ? {
          id: latest.id,
          release_version: latest.version,
          status: latest.status,
          is_rollback: latest.rollback_of !== null,
          created: iso(latest.created_at),
          finished: latest.finished_at ? iso(latest.finished_at) : null,
          started_by: production!.startedBy.get(latest.id) ?? null,
        }
      : null,
    traffic: { bucket_seconds: BUCKET_SECONDS, requests, errors },
  };
}
