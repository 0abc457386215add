import { sql, type Expression, type RawBuilder } from 'kysely';
import type { Db } from '../db/database.js';
import type { PipelineJobData } from './types.js';

/** The jobs' queue name, as the records and logs know it (the jobs are rows of `pipeline_jobs`). */
export const PIPELINE_QUEUE = 'pipeline';
/** How long a silent worker keeps its applications' jobs (its heartbeat beats every few seconds; recovery frees them sooner). */
export const WORKER_AFFINITY_SECONDS = 30;
/** How long settled jobs stay readable (metrics, a record's last job) before the sweep deletes them. */
export const SETTLED_JOB_RETENTION_DAYS = 7;

/**
 * What the job loop needs to know about applications, given by the composition root so the
 * job store never reads the modules' tables.
 */
export interface JobPorts {
  /**
   * The organization an application belongs to and the user who created it (null when the
   * application is unknown): its jobs count against both their caps. An organization with no
   * recorded creator is its own owner.
   */
  budgetOf(applicationId: string): Promise<JobBudget | null>;
  /**
   * Applications whose instances run in another live worker's runtime (heartbeat within
   * `freshSeconds`): their jobs (deploys, reconciles) are that worker's, or two would diverge.
   */
  applicationsHeldElsewhere(workerId: string, freshSeconds: number): Promise<string[]>;
}

export interface JobBudget {
  organizationId: string;
  ownerId: string;
}

/**
 * Limits of the shared pipeline (docs/configuration.md): per organization, per creating
 * user (all the organizations one user created share them, so a new organization resets
 * nothing) and for the whole site.
 */
export interface OrganizationLimits {
  /** Jobs of one organization running at once, across all workers. */
  concurrency: number;
  /** Jobs of one organization waiting or running; more are refused (429). */
  queued: number;
  /** Jobs of one user's organizations running at once. */
  ownerConcurrency?: number;
  /** Jobs of one user's organizations waiting or running; more are refused (429). */
  ownerQueued?: number;
  /** Jobs waiting or running on the site; more are refused (429). */
  siteQueued?: number;
  /** Jobs running at once on the whole site, across all workers. */
  siteConcurrency?: number;
}

/** Why a waiting job has not started yet (JobStore.waits). */
export type JobWait =
  | { behind: { jobId: string; kind: string; recordId: string | null; running: boolean } }
  | { limit: 'organization' | 'owner' | 'site'; cap: number }
  | { worker: true };

/** The pipeline's limits as the operator configured them. */
export function pipelineLimits(config: {
  PIPELINE_ORG_CONCURRENCY: number;
  PIPELINE_ORG_QUEUE_LIMIT: number;
  PIPELINE_USER_CONCURRENCY: number;
  PIPELINE_USER_QUEUE_LIMIT: number;
  PIPELINE_SITE_QUEUE_LIMIT: number;
  PIPELINE_SITE_CONCURRENCY: number;
}): OrganizationLimits {
  return {
    concurrency: config.PIPELINE_ORG_CONCURRENCY,
    queued: config.PIPELINE_ORG_QUEUE_LIMIT,
    ownerConcurrency: config.PIPELINE_USER_CONCURRENCY,
    ownerQueued: config.PIPELINE_USER_QUEUE_LIMIT,
    siteQueued: config.PIPELINE_SITE_QUEUE_LIMIT,
    siteConcurrency: config.PIPELINE_SITE_CONCURRENCY,
  };
}

const NO_PRACTICAL_LIMIT = 1_000_000;

export interface FetchedJob {
  id: string;
  data: PipelineJobData;
}

/**
 * The counts the queue caps compare (`queuedFor`), as a subquery a caller's statement may embed
 * with its organization and owner as its own expressions (text): a release request reads them
 * with its other checks in one statement (issue 35).
 */
export function queuedCounts(
  organizationId: string | Expression<string>,
  ownerId: string | Expression<string>,
): RawBuilder<{ organization: number; owner: number; site: number }> {
  return sql<{ organization: number; owner: number; site: number }>`
      SELECT count(*) FILTER (WHERE organization_id = ${organizationId}) AS organization,
             count(*) FILTER (WHERE owner_id = ${ownerId}) AS owner,
             count(*) AS site
      FROM pipeline_jobs WHERE state IN ('created', 'active')`;
}

/**
 * The insert `JobStore.enqueue` makes, as one step of the caller's statement: a job for each row
 * of its CTE `source` (so the job exists exactly when that step wrote its record), stamped when
 * that row is produced (`clock_timestamp()`, after any lock the step waited for, as enqueue).
 */
export function jobInsertFrom(data: PipelineJobData, source: string): RawBuilder<{ id: string }> {
  const organizationId = data.organizationId ?? null;
  return sql<{ id: string }>`INSERT INTO pipeline_jobs (kind, application_id, organization_id, owner_id, data, created_on)
      SELECT ${data.kind}::text, ${data.applicationId}::text, ${organizationId}::text, ${data.ownerId ?? organizationId}::text,
             ${JSON.stringify(data)}::jsonb, clock_timestamp()
      FROM ${sql.table(source)} RETURNING id`;
}

/**
 * The pipeline's jobs, in Slipway's own table (`pipeline_jobs`, migration 0032).
 *
 * A queue library's fetch takes the oldest waiting job; ours takes the oldest waiting job whose
 * application has no active job and no older waiting job (order per application is kept), whose
 * organization and creating user are under their caps, marks it active, and records which
 * worker runs it, in one statement, so no crash can leave a job active without an owner on
 * record. The table is ours, so this needs no library's private tables.
 */
export class JobStore {
  constructor(
    private readonly db: Db,
    private readonly limits: OrganizationLimits = { concurrency: 64, queued: 1_000_000 },
  ) {}

  /** Queues a job behind its application's earlier ones; returns its id. With `db` a transaction, it exists once that commits. */
  async enqueue(data: PipelineJobData, db: Db = this.db): Promise<string> {
    const row = await db
      .insertInto('pipeline_jobs')
      .values({
        kind: data.kind,
        application_id: data.applicationId,
        organization_id: data.organizationId ?? null,
        owner_id: data.ownerId ?? data.organizationId ?? null,
        data: JSON.stringify(data),
        // The insert's own time, not its transaction's start: a job queued under the application's lock
        // (a release and its job) takes its place in the order the lock was taken.
        created_on: sql<Date>`clock_timestamp()`,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    return row.id;
  }

  /** Jobs waiting or running: of the organization, of its owner's organizations, on the site. */
  async queuedFor(budget: JobBudget): Promise<{ organization: number; owner: number; site: number }> {
    const { rows } = await queuedCounts(budget.organizationId, budget.ownerId).execute(this.db);
    const row = rows[0];
    return { organization: Number(row?.organization ?? 0), owner: Number(row?.owner ?? 0), site: Number(row?.site ?? 0) };
  }

  /**
   * Fairness across organizations: among the organizations under their concurrency cap whose
   * creators are under theirs, the creator with the fewest running jobs goes first, then the
   * organization with the fewest (oldest job first on a tie), so one organization's flood, or
   * one user's across the organizations they created, takes at most its cap of workers and
   * others' jobs go next.
   * Fetches run one at a time (advisory lock) so the cap holds across workers.
   */
  async fetchNext(workerId: string, kinds: string[], heldElsewhere: string[] = []): Promise<FetchedJob | null> {
    if (kinds.length === 0) return null;
    try {
      return await this.db.transaction().execute(async (trx) => {
        await sql`SELECT pg_advisory_xact_lock(hashtext('slipway.pipeline-fetch'))`.execute(trx);
        const { rows } = await sql<FetchedJob>`
        WITH active AS (
          SELECT organization_id AS org, owner_id AS owner FROM pipeline_jobs WHERE state = 'active'
        ), running AS (
          SELECT org, count(*) AS n FROM active GROUP BY 1
        ), running_owners AS (
          SELECT owner, count(*) AS n FROM active GROUP BY 1
        ), next AS (
          SELECT j.id FROM pipeline_jobs j
          LEFT JOIN running r ON r.org = j.organization_id
          LEFT JOIN running_owners ro ON ro.owner = j.owner_id
          WHERE j.state = 'created'
            AND (SELECT count(*) FROM active) < ${this.limits.siteConcurrency ?? NO_PRACTICAL_LIMIT}
            -- Jobs of no known organization (none in the API's jobs) have no cap.
            AND coalesce(r.n, 0) < ${this.limits.concurrency}
            AND coalesce(ro.n, 0) < ${this.limits.ownerConcurrency ?? NO_PRACTICAL_LIMIT}
            AND j.kind = ANY(${kinds}::text[])
            AND NOT EXISTS (SELECT 1 FROM pipeline_jobs a WHERE a.state = 'active' AND a.application_id = j.application_id)
            AND NOT EXISTS (
              SELECT 1 FROM pipeline_jobs o
              WHERE o.state = 'created' AND o.application_id = j.application_id AND (o.created_on, o.id) < (j.created_on, j.id))
            -- An application's instances run in one worker's runtime (see JobPorts).
            AND NOT (j.application_id = ANY(${heldElsewhere}::text[]))
          ORDER BY coalesce(ro.n, 0), coalesce(r.n, 0), j.created_on, j.id
          LIMIT 1
          FOR UPDATE OF j SKIP LOCKED
        ), started AS (
          UPDATE pipeline_jobs j
          -- This statement's time, not the transaction's (now()): that began before the advisory lock's wait,
          -- so a job could look started before the previous job of its application completed.
          SET state = 'active', started_on = statement_timestamp(),
              retry_count = CASE WHEN j.started_on IS NOT NULL THEN j.retry_count + 1 ELSE j.retry_count END
          FROM next WHERE j.id = next.id
          RETURNING j.id, j.data
        ), recorded AS (
          INSERT INTO job_runs (job_id, worker_id, kind, application_id, data)
          SELECT id, ${workerId}, data->>'kind', (data->>'applicationId')::uuid, data FROM started
        )
        SELECT id::text AS id, data FROM started`.execute(trx);
        return rows[0] ?? null;
      });
    } catch (err) {
      // Two workers raced for one application: the one-active-job index refused the loser. Any
      // other unique violation (a run record left behind) is a bug to see, not a silent "no job":
      // the same job would be picked first, and refused, at every fetch.
      const e = err as { code?: string; constraint?: string };
      if (e.code === '23505' && e.constraint === 'pipeline_jobs_one_active_per_application') return null;
      throw err;
    }
  }

  /**
   * Why each of the given jobs still waits (jobs no longer waiting are left out): behind its
   * application's running or earlier job, at a concurrency cap, or for a free worker.
   */
  async waits(jobIds: string[]): Promise<Map<string, JobWait>> {
    const waits = new Map<string, JobWait>();
    if (jobIds.length === 0) return waits;
    const { rows } = await sql<{
      id: string;
      behind_id: string | null;
      behind_kind: string | null;
      behind_record: string | null;
      behind_state: string | null;
      org_running: string;
      owner_running: string;
      site_running: string;
      has_org: boolean;
      has_owner: boolean;
    }>`
      SELECT j.id::text AS id, b.id::text AS behind_id, b.kind AS behind_kind, b.data->>'recordId' AS behind_record, b.state AS behind_state,
             (SELECT count(*) FROM pipeline_jobs a WHERE a.state = 'active' AND a.organization_id = j.organization_id) AS org_running,
             (SELECT count(*) FROM pipeline_jobs a WHERE a.state = 'active' AND a.owner_id = j.owner_id) AS owner_running,
             (SELECT count(*) FROM pipeline_jobs a WHERE a.state = 'active') AS site_running,
             j.organization_id IS NOT NULL AS has_org, j.owner_id IS NOT NULL AS has_owner
      FROM pipeline_jobs j
      LEFT JOIN LATERAL (
        SELECT o.id, o.kind, o.data, o.state FROM pipeline_jobs o
        WHERE o.application_id = j.application_id AND o.id <> j.id
          AND (o.state = 'active' OR (o.state = 'created' AND (o.created_on, o.id) < (j.created_on, j.id)))
        ORDER BY (o.state = 'active') DESC, o.created_on, o.id
        LIMIT 1
      ) b ON true
      WHERE j.id = ANY(${jobIds}::uuid[]) AND j.state = 'created'`.execute(this.db);
    for (const r of rows) {
      const limits = this.limits;
      if (r.behind_id)
        waits.set(r.id, {
          behind: { jobId: r.behind_id, kind: r.behind_kind ?? '', recordId: r.behind_record, running: r.behind_state === 'active' },
        });
      else if (r.has_org && Number(r.org_running) >= limits.concurrency)
        waits.set(r.id, { limit: 'organization', cap: limits.concurrency });
      else if (r.has_owner && limits.ownerConcurrency !== undefined && Number(r.owner_running) >= limits.ownerConcurrency)
        waits.set(r.id, { limit: 'owner', cap: limits.ownerConcurrency });
      else if (limits.siteConcurrency !== undefined && Number(r.site_running) >= limits.siteConcurrency)
        waits.set(r.id, { limit: 'site', cap: limits.siteConcurrency });
      else waits.set(r.id, { worker: true });
    }
    return waits;
  }

  /**
   * Takes a waiting job out of the queue (failed, with `message`); false when it is no longer
   * waiting (already started or settled).
   */
  async dequeue(jobId: string, message: string): Promise<boolean> {
    const rows = await sql<{
      id: string;
    }>`UPDATE pipeline_jobs SET state = 'failed', completed_on = now(), output = ${JSON.stringify({ message })}::jsonb
      WHERE id = ${jobId} AND state = 'created' RETURNING id::text AS id`.execute(this.db);
    return rows.rows.length > 0;
  }

  /** Records that a running job should stop; its worker sees it at once (same process) or at its next heartbeat. */
  async requestCancel(jobId: string): Promise<boolean> {
    const rows = await sql<{ id: string }>`UPDATE pipeline_jobs SET cancel_requested_at = coalesce(cancel_requested_at, now())
      WHERE id = ${jobId} AND state = 'active' RETURNING id::text AS id`.execute(this.db);
    return rows.rows.length > 0;
  }

  /** Of the given running jobs, those whose cancel was requested. */
  async cancelRequested(jobIds: string[]): Promise<string[]> {
    if (jobIds.length === 0) return [];
    const { rows } = await sql<{ id: string }>`SELECT id::text AS id FROM pipeline_jobs
      WHERE id = ANY(${jobIds}::uuid[]) AND cancel_requested_at IS NOT NULL`.execute(this.db);
    return rows.map((r) => r.id);
  }

  /** A job its worker finished: completed, or failed with the error's message. Only while it is active. */
  async settle(jobId: string, failure: { message: string } | null): Promise<void> {
    await this.db
      .updateTable('pipeline_jobs')
      .set({
        state: failure ? 'failed' : 'completed',
        completed_on: sql`now()`,
        output: failure ? JSON.stringify(failure) : null,
      })
      .where('id', '=', jobId)
      .where('state', '=', 'active')
      .execute();
  }

  /** Deletes jobs settled longer ago than `days` (the records keep their own outcome). */
  async deleteSettled(days = SETTLED_JOB_RETENTION_DAYS): Promise<number> {
    const rows = await this.db
      .deleteFrom('pipeline_jobs')
      .where('state', 'in', ['completed', 'failed'])
      .where('completed_on', '<', sql<Date>`now() - make_interval(days => ${days})`)
      .returning('id')
      .execute();
    return rows.length;
  }

  async finishRun(jobId: string): Promise<void> {
    await this.db.deleteFrom('job_runs').where('job_id', '=', jobId).execute();
  }

  /** Takes over a dead worker's run record; false when another worker's recovery already did. */
  async claimRun(jobId: string, workerId: string): Promise<boolean> {
    const rows = await this.db
      .deleteFrom('job_runs')
      .where('job_id', '=', jobId)
      .where('worker_id', '=', workerId)
      .returning('job_id')
      .execute();
    return rows.length > 0;
  }

  // --- workers and their heartbeat ---

  async registerWorker(id: string, hostname: string, pid: number): Promise<void> {
    await this.db.insertInto('workers').values({ id, hostname, pid }).execute();
  }

  /** Also re-registers a worker that others took for dead (e.g. after a long database outage). */
  async heartbeat(id: string, hostname: string, pid: number): Promise<void> {
    await this.db
      .insertInto('workers')
      .values({ id, hostname, pid })
      .onConflict((oc) => oc.column('id').doUpdateSet({ heartbeat_at: sql`now()`, stopped_at: null }))
      .execute();
  }

  async markStopped(id: string): Promise<void> {
    await this.db
      .updateTable('workers')
      .set({ stopped_at: sql`now()` })
      .where('id', '=', id)
      .execute();
  }

  /** Workers that are not this one and are alive by their record (not stopped, fresh heartbeat). */
  listOtherWorkers(selfId: string) {
    return this.db.selectFrom('workers').selectAll().where('id', '<>', selfId).execute();
  }

  async forgetWorker(id: string): Promise<void> {
    await this.db.deleteFrom('workers').where('id', '=', id).execute();
  }

  /** Runs recorded for the given (dead) workers or for workers no longer on record, with the state of their job. */
  async runsOf(workerIds: string[]) {
    const { rows } = await sql<{ job_id: string; worker_id: string; data: PipelineJobData; state: string | null }>`
      SELECT r.job_id, r.worker_id, r.data, j.state
      FROM job_runs r LEFT JOIN pipeline_jobs j ON j.id = r.job_id
      WHERE r.worker_id = ANY(${workerIds}::text[]) OR NOT EXISTS (SELECT 1 FROM workers w WHERE w.id = r.worker_id)`.execute(this.db);
    return rows;
  }

  /** Active jobs nobody has on record as running (their worker died between two steps). */
  async orphanedActiveJobs(olderThanSeconds: number) {
    const { rows } = await sql<{ id: string; data: PipelineJobData }>`
      SELECT j.id::text AS id, j.data FROM pipeline_jobs j
      WHERE j.state = 'active'
        AND j.started_on < now() - make_interval(secs => ${olderThanSeconds})
        AND NOT EXISTS (SELECT 1 FROM job_runs r WHERE r.job_id = j.id)`.execute(this.db);
    return rows;
  }

  /** Ids of the pipeline jobs still waiting or running. */
  async liveJobIds(): Promise<Set<string>> {
    const { rows } = await sql<{ id: string }>`
      SELECT id::text AS id FROM pipeline_jobs WHERE state IN ('created', 'active')`.execute(this.db);
    return new Set(rows.map((r) => r.id));
  }

  /**
   * Puts an interrupted job back to waiting, keeping its place in its application's queue.
   * Only while nobody runs it (no run record), so a job already taken again is never reset.
   */
  async requeue(jobId: string): Promise<void> {
    await sql`UPDATE pipeline_jobs SET state = 'created', started_on = NULL
      WHERE id = ${jobId} AND state = 'active'
        AND NOT EXISTS (SELECT 1 FROM job_runs r WHERE r.job_id = ${jobId})`.execute(this.db);
  }

  /** Fails an interrupted job (no retries), under the same condition as requeue. */
  async failUnowned(jobId: string, message: string): Promise<void> {
    await sql`UPDATE pipeline_jobs SET state = 'failed', completed_on = now(), output = ${JSON.stringify({ message })}::jsonb
      WHERE id = ${jobId} AND state = 'active'
        AND NOT EXISTS (SELECT 1 FROM job_runs r WHERE r.job_id = ${jobId})`.execute(this.db);
  }
}
