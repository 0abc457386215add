import { randomBytes } from 'node:crypto';
import { describe, expect, inject, it } from 'vitest';
import { createDb } from '../../src/platform/db/database.js';
import { migrateToLatest } from '../../src/platform/db/migrate.js';
import { PipelineJobs } from '../../src/platform/jobs/pipeline-jobs.js';
import { createScratchDatabase } from '../helpers/scratch-database.js';

/** What every process does at start on one database: migrations, then the job store (pg-boss's schema). */
async function openLikeAProcess(url: string): Promise<void> {
  const db = createDb(url, 3);
  try {
    await migrateToLatest(db);
    const jobs = new PipelineJobs({ db, concurrency: 1 });
    await jobs.start();
    await jobs.stop();
  } finally {
    await db.destroy();
  }
}

// Three processes (an API and two workers) starting at the same moment on a new database used
// to fail one of them with "deadlock detected" now and then (pg-boss creating its queue twice).
describe('processes starting together on an empty database', () => {
  it('all start, round after round, with one migration record each', async () => {
    const rounds = 15;
    for (let round = 0; round < rounds; round++) {
      const scratch = await createScratchDatabase(inject('postgresAdminUrl'), `start_${randomBytes(5).toString('hex')}`, {
        ownerUrl: inject('postgresOwnerUrl'),
      });
      try {
        const results = await Promise.allSettled([1, 2, 3].map(() => openLikeAProcess(scratch.url)));
        const errors = results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason));
        expect(errors, `round ${round}`).toEqual([]);
        const db = createDb(scratch.url, 1);
        const migrations = await db
          .selectFrom('kysely_migration' as never)
          .select('name' as never)
          .execute();
        const jobs = await db.selectFrom('pipeline_jobs').select('id').execute();
        await db.destroy();
        expect(new Set(migrations.map((m) => (m as { name: string }).name)).size).toBe(migrations.length);
        expect(jobs).toEqual([]);
      } finally {
        await scratch.drop();
      }
    }
  }, 120_000);
});
