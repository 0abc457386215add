/**
 * Migration 0032 moves the pipeline's jobs from pg-boss's queue (where Slipway kept them before)
 * into `pipeline_jobs`: an upgrade keeps the jobs still waiting or running, with their ids
 * (the records of builds and deployments name them), and leaves settled ones behind.
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import PgBoss from 'pg-boss';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDb, type Db } from '../../src/platform/db/database.js';
import { migrateTo, migrateToLatest } from '../../src/platform/db/migrate.js';
import { createScratchDatabase, type ScratchDatabase } from '../helpers/scratch-database.js';

let scratch: ScratchDatabase;
let db: Db;
beforeAll(async () => {
  scratch = await createScratchDatabase(inject('postgresAdminUrl'), `jobs_upgrade_${randomBytes(4).toString('hex')}`, {
    ownerUrl: inject('postgresOwnerUrl'),
  });
  db = createDb(scratch.url, 2);
});
afterAll(async () => {
  await db?.destroy();
  await scratch?.drop();
});

describe('migration 0032', () => {
  it("moves the pipeline jobs waiting or running in pg-boss's queue, with their ids", async () => {
    await migrateTo(db, '0028_organization_outbound');
    // The queue as the previous release set it up and filled it, through pg-boss's own API.
    const boss = new PgBoss({ connectionString: scratch.url, schedule: false, supervise: false });
    await boss.start();
    const [appA, appB, appC, org, owner] = [uuidv7(), uuidv7(), uuidv7(), uuidv7(), uuidv7()];
    let ids: { waiting: string; running: string; done: string };
    try {
      await boss.createQueue('pipeline', { name: 'pipeline', policy: 'singleton', retryLimit: 0 });
      const send = async (applicationId: string, kind: string) =>
        (await boss.send(
          'pipeline',
          { kind, applicationId, organizationId: org, ownerId: owner, recordId: uuidv7() },
          { singletonKey: applicationId },
        ))!;
      const running = await send(appA, 'build');
      const [fetched] = await boss.fetch('pipeline');
      expect(fetched?.id).toBe(running);
      const done = await send(appC, 'release');
      const [settling] = await boss.fetch('pipeline');
      expect(settling?.id).toBe(done);
      await boss.complete('pipeline', done);
      const waiting = await send(appB, 'deploy');
      ids = { waiting, running, done };
    } finally {
      await boss.stop({ graceful: false, wait: true, timeout: 1000 });
    }

    await migrateToLatest(db);
    const rows = await db
      .selectFrom('pipeline_jobs')
      .select(['id', 'kind', 'application_id', 'organization_id', 'owner_id', 'state', 'data'])
      .orderBy('created_on')
      .execute();
    expect(rows).toEqual([
      expect.objectContaining({
        id: ids.running,
        kind: 'build',
        application_id: appA,
        organization_id: org,
        owner_id: owner,
        state: 'active',
      }),
      expect.objectContaining({
        id: ids.waiting,
        kind: 'deploy',
        application_id: appB,
        organization_id: org,
        owner_id: owner,
        state: 'created',
      }),
    ]);
    expect(rows[1]!.data).toMatchObject({ kind: 'deploy', applicationId: appB });
    // One active job per application holds in the new table too.
    await expect(
      sql`INSERT INTO pipeline_jobs (kind, application_id, data, state) VALUES ('build', ${appA}, '{}', 'active')`.execute(db),
    ).rejects.toThrow(/pipeline_jobs_one_active_per_application/);
  });
});
