import { sql, type RawBuilder, type Updateable } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import type { Db } from '../../platform/db/database.js';
import type { ReleasesTable } from '../../platform/db/schema.js';
import { notFound } from '../../platform/errors.js';
import { precompiled } from '../../platform/db/precompiled.js';
import { executeAudited } from '../../platform/audit/audited-statement.js';
import { lockedEnvironmentSlug } from '../../platform/access/environment-protection.js';
import { queuedCounts } from '../../platform/jobs/index.js';
import { BUILD_STEPS } from '../records/index.js';
import { countRows, failIfBuilding, settleAbandoned } from '../records/index.js';
import type { FailureCode } from '../../platform/failures.js';

/** What a release request checks, read in one statement (`ReleasesRepository.requestChecks`). */
export interface ReleaseRequestChecks {
  id: string;
  platform: string;
  is_member: boolean;
  org_admin: boolean;
  /** The application's production environment (null: none). */
  environment_id: string | null;
  /** The first protected environment among those the caller may not change without being an organization admin. */
  locked: string | null;
  organization_id: string;
  owner_id: string;
  /** Pipeline jobs waiting or running: of the organization, of its creator's organizations, on the site. */
  organization: number;
  owner: number;
  site: number;
}

/** A step of a release's statement that queues its job: one job per row of the CTE `source`, which holds the new version. */
export type ReleaseJobStep = (source: string, releaseId: string) => RawBuilder<{ id: string }>;

export class ReleasesRepository {
  // Every check of a release request, one prepared statement (issue 35: six round trips before).
  private readonly checks;

  constructor(private readonly db: Db) {
    this.checks = precompiled(db, ['applicationId', 'userId'], ({ applicationId, userId }: { applicationId: string; userId: string }) => ({
      compile: () =>
        sql<ReleaseRequestChecks>`
        SELECT a.id, a.platform, m.user_id IS NOT NULL AS is_member, coalesce(m.admin, false) AS org_admin,
               production.id AS environment_id,
               (${lockedEnvironmentSlug(db, 'environmentId', userId, sql<string>`production.id`)}) AS locked,
               p.organization_id::text AS organization_id, coalesce(o.created_by, p.organization_id)::text AS owner_id,
               queued.organization, queued.owner, queued.site
        FROM applications a
        JOIN projects p ON p.id = a.project_id
        JOIN organizations o ON o.id = p.organization_id
        LEFT JOIN memberships m ON m.organization_id = p.organization_id AND m.user_id = ${userId}
        LEFT JOIN LATERAL (
          -- findProductionEnvironmentId's choice
          SELECT e.id FROM environments e WHERE e.project_id = a.project_id AND e.env_type = 'production'
          ORDER BY CASE WHEN e.slug = 'production' THEN 0 ELSE 1 END, e.created_at LIMIT 1
        ) production ON true
        CROSS JOIN LATERAL (${queuedCounts(sql<string>`p.organization_id::text`, sql<string>`coalesce(o.created_by, p.organization_id)::text`)}) queued
        WHERE a.id = ${applicationId}`.compile(db),
    }));
  }

  /**
   * The application (undefined: none) with what a release request checks: the caller's
   * membership and admin flag, the production environment and whether it is locked to the
   * caller, the budget and the queue counts.
   */
  async requestChecks(applicationId: string, userId: string): Promise<ReleaseRequestChecks | undefined> {
    const [row] = await this.checks({ applicationId, userId });
    return row;
  }

  /**
   * A new release record in the environment with the application's next version: one numbering
   * across all its environments (decisions.md), in ONE statement (issue 35). The version comes from
   * the application's row of `release_versions`, locked by the upsert for this statement only and
   * read at its newest (an upsert that waited for another release sees that one's version), never
   * below the highest stored version. `imageId` presets the image it releases (else the runner
   * takes the newest built). With `queue`, the release's job is written by the same statement (no
   * release without its job, jobs in version order) and the release records its id. The request's
   * audit row is written by it too when the request still needs one (executeAudited).
   */
  async insertNext(
    applicationId: string,
    environmentId: string,
    platform: string,
    imageId: string | null = null,
    queue?: ReleaseJobStep,
  ): Promise<{ id: string; version: number }> {
    const id = uuidv7();
    // Named, so the stage table's check (test/pipeline-stages) sees where a release starts `building`.
    const status = 'building' as const;
    const numbered = sql`numbered AS (
        INSERT INTO release_versions AS v (application_id, last_version)
        SELECT a.id, coalesce((SELECT max(r.version) FROM releases r WHERE r.application_id = a.id), 0) + 1
        FROM applications a WHERE a.id = ${applicationId}
        ON CONFLICT (application_id) DO UPDATE SET last_version = greatest(v.last_version + 1, excluded.last_version)
        RETURNING application_id, last_version)`;
    const steps = queue ? sql`${numbered}, job AS (${queue('numbered', id)})` : numbered;
    const release = sql`INSERT INTO releases (id, job_id, application_id, environment_id, version, platform, status, image_ref, build_step, log_text)
        SELECT ${id}::uuid, ${queue ? sql`(SELECT job.id::text FROM job)` : sql`NULL`}, n.application_id, ${environmentId}::uuid,
               n.last_version, ${platform}::text, ${status}::text, ${imageId}::uuid, ${JSON.stringify({ steps: [...BUILD_STEPS], current: 0 })}::jsonb,
               ${'Queued\n'}::text
        FROM numbered n RETURNING id, version`;
    const [row] = await executeAudited<{ id: string; version: number }>(this.db, 'created', (audit) =>
      audit
        ? sql`WITH ${steps}, created AS (${release}) ${audit.cte} SELECT id, version ${audit.id} FROM created`
        : // The release's insert as the statement itself: the auditing driver sees the write (its first CTE) and how many rows it wrote.
          sql`WITH ${steps} ${release}`,
    );
    if (!row) throw notFound('Application');
    return row;
  }

  findById(id: string) {
    return this.db.selectFrom('releases').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** The release with its image's repository name and Dockerfile, for the detail view. */
  withImage(id: string) {
    return this.db
      .selectFrom('releases as r')
      .leftJoin('images as i', 'i.id', 'r.image_ref')
      .selectAll('r')
      .select([
        'r.environment_slug as environment',
        'i.id as img_id',
        'i.version as img_version',
        'i.image_id as img_digest',
        'i.commit_sha as img_commit_sha',
        'i.built as img_built',
        'i.repository_name as img_repository_name',
        'i.dockerfile as img_dockerfile',
        'i.created_at as img_created_at',
      ])
      .where('r.id', '=', id)
      .executeTakeFirst();
  }

  /** A page of the application's releases, newest first: in one environment, or in all of them (null). */
  async page(applicationId: string, environmentId: string | null, limit: number, offset: number) {
    let base = this.db.selectFrom('releases as r').where('r.application_id', '=', applicationId);
    if (environmentId) base = base.where('r.environment_id', '=', environmentId);
    const [rows, total] = await Promise.all([
      base.selectAll('r').select('r.environment_slug as environment').orderBy('r.version', 'desc').limit(limit).offset(offset).execute(),
      countRows(this.db, 'releases', applicationId, environmentId),
    ]);
    return { rows, total };
  }

  /** The newest successful release before `version`: what a new release is compared with. */
  previousBuilt(applicationId: string, environmentId: string, version: number) {
    return this.db
      .selectFrom('releases as r')
      .leftJoin('images as i', 'i.id', 'r.image_ref')
      .select(['r.id', 'r.version', 'r.configuration', 'r.configuration_sealed', 'i.image_id', 'i.commit_sha', 'i.processes'])
      .where('r.application_id', '=', applicationId)
      .where('r.environment_id', '=', environmentId)
      .where('r.built', '=', true)
      .where('r.version', '<', version)
      .orderBy('r.version', 'desc')
      .limit(1)
      .executeTakeFirst();
  }

  update(id: string, changes: Updateable<ReleasesTable>) {
    return this.db
      .updateTable('releases')
      .set({ ...changes, updated_at: sql`now()` })
      .where('id', '=', id)
      .execute();
  }

  /** The releases a pipeline job created (a `chain` job makes at most one per environment). */
  idsOfJob(jobId: string) {
    return this.db.selectFrom('releases').select('id').where('job_id', '=', jobId).execute();
  }

  /** Fails the record if it is still in progress (never overwrites a finished one). */
  failIfBuilding(id: string, detail: string, code: FailureCode = 'interrupted') {
    return failIfBuilding(this.db, 'releases', id, detail, code);
  }

  settleAbandoned(liveJobIds: Set<string>, detail: string, graceSeconds?: number) {
    return settleAbandoned(this.db, 'releases', liveJobIds, detail, graceSeconds);
  }
}
