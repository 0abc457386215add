import { sql, type Updateable } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import type { Db } from '../../platform/db/database.js';
import type { ReleasesTable } from '../../platform/db/schema.js';
import { notFound } from '../../platform/errors.js';
import { lockApplication } from '../records/index.js';
import { BUILD_STEPS } from '../records/index.js';
import { countRows, failIfBuilding, settleAbandoned } from '../records/index.js';
import type { FailureCode } from '../../platform/failures.js';

export class ReleasesRepository {
  constructor(private readonly db: Db) {}

  /**
   * A new release record in the environment with the application's next version: one numbering
   * across all its environments (decisions.md), taken under the application's row lock.
   */
  /** The next version; `imageId` presets the image it releases (else the runner takes the newest built). */
  /**
   * With `queue`, the release's job is queued in the same transaction (issue 35: one commit, and
   * no release without its job or job without its release): it gets the new release's id and
   * returns the job's, which the release records.
   */
  insertNext(
    applicationId: string,
    environmentId: string,
    platform: string,
    imageId: string | null = null,
    queue?: (trx: Db, releaseId: string) => Promise<string>,
  ) {
    return this.db.transaction().execute(async (trx) => {
      if (!(await lockApplication(trx, applicationId))) throw notFound('Application');
      const { next } = await trx
        .selectFrom('releases')
        .select(sql<number>`coalesce(max(version), 0) + 1`.as('next'))
        .where('application_id', '=', applicationId)
        .executeTakeFirstOrThrow();
      const id = uuidv7();
      const jobId = queue ? await queue(trx, id) : null;
      return trx
        .insertInto('releases')
        .values({
          id,
          job_id: jobId,
          application_id: applicationId,
          environment_id: environmentId,
          version: next,
          platform,
          status: 'building',
          image_ref: imageId,
          build_step: JSON.stringify({ steps: [...BUILD_STEPS], current: 0 }),
          log_text: 'Queued\n',
        })
        .returning(['id', 'version'])
        .executeTakeFirstOrThrow();
    });
  }

  findById(id: string) {
    return this.db.selectFrom('releases').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** The release with its image's repository name and Dockerfile, for the detail view. */
  withImage(id: string) {
    return this.db
      .selectFrom('releases as r')
      .leftJoin('images as i', 'i.id', 'r.image_ref')
      .innerJoin('environments as e', 'e.id', 'r.environment_id')
      .selectAll('r')
      .select([
        'e.slug as environment',
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
    let base = this.db
      .selectFrom('releases as r')
      .innerJoin('environments as e', 'e.id', 'r.environment_id')
      .where('r.application_id', '=', applicationId);
    if (environmentId) base = base.where('r.environment_id', '=', environmentId);
    const [rows, total] = await Promise.all([
      base.selectAll('r').select('e.slug as environment').orderBy('r.version', 'desc').limit(limit).offset(offset).execute(),
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
