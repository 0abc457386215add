import { sql, type Updateable } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import type { Db } from '../../platform/db/database.js';
import type { ImagesTable } from '../../platform/db/schema.js';
import { notFound } from '../../platform/errors.js';
import { lockApplication } from '../records/index.js';
import { BUILD_STEPS } from '../records/index.js';
import { countRows, failIfBuilding, settleAbandoned } from '../records/index.js';
import type { FailureCode } from '../../platform/failures.js';

export class ImagesRepository {
  constructor(private readonly db: Db) {}

  /** A new image record with the next version of the application (taken under the application's row lock). */
  insertNext(
    applicationId: string,
    fields: {
      repository_name: string;
      build_ref: string;
      environment_id: string | null;
      built_for_preview: boolean;
      pushed?: boolean;
      source_image?: string | null;
      source_credentials?: string | null;
    },
  ) {
    return this.db.transaction().execute(async (trx) => {
      if (!(await lockApplication(trx, applicationId))) throw notFound('Application');
      const { next } = await trx
        .selectFrom('images')
        .select(sql<number>`coalesce(max(version), 0) + 1`.as('next'))
        .where('application_id', '=', applicationId)
        .executeTakeFirstOrThrow();
      return trx
        .insertInto('images')
        .values({
          id: uuidv7(),
          application_id: applicationId,
          version: next,
          status: 'building',
          repository_name: fields.repository_name,
          build_ref: fields.build_ref,
          environment_id: fields.environment_id,
          built_for_preview: fields.built_for_preview,
          pushed: fields.pushed ?? false,
          source_image: fields.source_image ?? null,
          source_credentials: fields.source_credentials ?? null,
          build_step: JSON.stringify({ steps: [...BUILD_STEPS], current: 0 }),
          log_text: 'Queued\n',
        })
        .returning(['id', 'version'])
        .executeTakeFirstOrThrow();
    });
  }

  findById(id: string) {
    return this.db.selectFrom('images').selectAll().where('id', '=', id).executeTakeFirst();
  }

  findByVersion(applicationId: string, version: number) {
    return this.db
      .selectFrom('images')
      .selectAll()
      .where('application_id', '=', applicationId)
      .where('version', '=', version)
      .executeTakeFirst();
  }

  async page(applicationId: string, limit: number, offset: number) {
    const [rows, total] = await Promise.all([
      this.db
        .selectFrom('images')
        .selectAll()
        .where('application_id', '=', applicationId)
        .orderBy('version', 'desc')
        .limit(limit)
        .offset(offset)
        .execute(),
      countRows(this.db, 'images', applicationId),
    ]);
    return { rows, total };
  }

  /** The newest built image of the application. */
  /**
   * The image a release in `environmentId` ships: the latest built for that preview when it is
   * one; else the latest not built for a preview (a pull request's image never reaches another environment).
   */
  latestBuilt(applicationId: string, environmentId: string, preview: boolean) {
    return this.db
      .selectFrom('images')
      .selectAll()
      .where('application_id', '=', applicationId)
      .where('built', '=', true)
      .where((eb) =>
        preview
          ? eb.and([eb('built_for_preview', '=', true), eb('environment_id', '=', environmentId)])
          : eb('built_for_preview', '=', false),
      )
      .orderBy('version', 'desc')
      .limit(1)
      .executeTakeFirst();
  }

  update(id: string, changes: Updateable<ImagesTable>) {
    return this.db
      .updateTable('images')
      .set({ ...changes, updated_at: sql`now()` })
      .where('id', '=', id)
      .execute();
  }

  /** Fails the record if it is still in progress (never overwrites a finished one). */
  failIfBuilding(id: string, detail: string, code: FailureCode = 'interrupted') {
    return failIfBuilding(this.db, 'images', id, detail, code);
  }

  settleAbandoned(liveJobIds: Set<string>, detail: string, graceSeconds?: number) {
    return settleAbandoned(this.db, 'images', liveJobIds, detail, graceSeconds);
  }
}
