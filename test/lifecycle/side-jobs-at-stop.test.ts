/**
 * A side queue's job (a webhook delivery, a notification, an alert evaluation) running when the
 * process stops. pg-boss settles a job after its handler returns without awaiting the statement:
 * a handler that outlived the stop settled on a pool already ended, an unhandled rejection that
 * failed a CI run (test/kubernetes/addon-backups.test.ts's alert evaluation) and would end a
 * production process with an error instead of exit 0.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import pg from 'pg';
import { createDb, type Db } from '../../src/platform/db/database.js';
import { PipelineJobs } from '../../src/platform/jobs/pipeline-jobs.js';
import { freshDatabase } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

let database: { url: string; drop: () => Promise<void> };
let db: Db;
/** What a test left open when it failed half-way, closed after it. */
let open: { jobs: PipelineJobs | null; db: boolean };
let unhandled: unknown[];
const recordUnhandled = (reason: unknown) => unhandled.push(reason);

beforeEach(async () => {
  database = await freshDatabase();
  db = createDb(database.url, 4);
  open = { jobs: null, db: true };
  unhandled = [];
  process.on('unhandledRejection', recordUnhandled);
});

afterEach(async () => {
  process.off('unhandledRejection', recordUnhandled);
  await open.jobs?.stop();
  if (open.db) await db.destroy();
  await database.drop();
});

/** A side queue whose handler holds each job until the test lets it go (then returns, or throws what it is given). */
async function jobsWithHeldQueue(stopTimeoutMs: number) {
  const jobs = new PipelineJobs({ db, stopTimeoutMs, pollIntervalMs: 100 });
  const held: Array<{ id: string; finish: (error?: Error) => void }> = [];
  await jobs.addQueue('held', { retryLimit: 2, retryDelaySeconds: 1, concurrency: 1 }, (_data, job) => {
    return new Promise<void>((resolve, reject) => {
      held.push({ id: job.id, finish: (error) => (error ? reject(error) : resolve()) });
    });
  });
  open.jobs = jobs;
  await jobs.startWorkers();
  return { jobs, held };
}

/**
 * A job queued, then the first fetch of the queue's worker held on a lock of pg-boss's job table
 * until `release()`: the fetch is on its way when the stop begins (pg-boss then waits for no job).
 */
async function fetchHeldAcrossStop(retryLimit: number) {
  const jobs = new PipelineJobs({ db, stopTimeoutMs: 10_000, pollIntervalMs: 100 });
  const ran: string[] = [];
  await jobs.addQueue('fetched', { retryLimit, retryDelaySeconds: 1, concurrency: 1 }, async (_data, job) => {
    ran.push(job.id);
  });
  open.jobs = jobs;
  await jobs.start();
  const jobId = await jobs.sendTo('fetched', { n: 5 });
  const locker = new pg.Client({ connectionString: database.url });
  await locker.connect();
  await locker.query('BEGIN; LOCK TABLE pgboss.job IN ACCESS EXCLUSIVE MODE');
  let stopped: Promise<void> | null = null;
  try {
    await jobs.startWorkers();
    await waitFor('a fetch waiting on the lock', async () => {
      // Inside a transaction PostgreSQL answers pg_stat_activity from its first look: looked at afresh each time.
      await locker.query('SELECT pg_stat_clear_snapshot()');
      const { rows } = await locker.query(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%SKIP LOCKED%'",
      );
      return rows[0].n > 0;
    });
    stopped = jobs.stop();
  } finally {
    // Released even when the wait failed: the pool's connections blocked on it would hold the clean-up.
    await locker.query('COMMIT');
    await locker.end();
  }
  await stopped;
  return { jobId, ran };
}

async function closeDatabase() {
  open.db = false;
  await db.destroy();
}

async function stateOf(jobId: string): Promise<string> {
  const reader = createDb(database.url, 1);
  try {
    const { rows } = await sql<{ state: string }>`SELECT state FROM pgboss.job WHERE id = ${jobId}`.execute(reader);
    return rows[0]!.state;
  } finally {
    await reader.destroy();
  }
}

describe('a side-queue job running when the job store stops', () => {
  it('that outlives the stop and the pool settles nothing and rejects nothing; the job stays for a retry', async () => {
    const { jobs, held } = await jobsWithHeldQueue(300);
    const jobId = await jobs.sendTo('held', { n: 1 });
    await waitFor('the handler to hold the job', () => held.length === 1);
    await jobs.stop();
    await closeDatabase();
    // What its query on the ended pool would throw.
    held[0]!.finish(new Error('Cannot use a pool after calling end on the pool'));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(unhandled).toEqual([]);
    // The stop failed it (pg-boss: "shut down while active"); it has retries left, so it is retried.
    expect(await stateOf(jobId)).toBe('retry');
  });

  it('that ends within the stop is recorded as done, not failed and delivered again', async () => {
    const { jobs, held } = await jobsWithHeldQueue(10_000);
    const jobId = await jobs.sendTo('held', { n: 2 });
    await waitFor('the handler to hold the job', () => held.length === 1);
    const stopping = jobs.stop();
    setTimeout(() => held[0]!.finish(), 300);
    await stopping;
    await closeDatabase();
    expect(held).toHaveLength(1);
    expect(unhandled).toEqual([]);
    expect(await stateOf(jobId)).toBe('completed');
  });

  it('stopped twice at once, stops once; started again, runs side jobs again', async () => {
    const { jobs, held } = await jobsWithHeldQueue(10_000);
    const first = await jobs.sendTo('held', { n: 3 });
    await waitFor('the handler to hold the job', () => held.length === 1);
    const stops = [jobs.stop(), jobs.stop()];
    setTimeout(() => held[0]!.finish(), 300);
    await Promise.all(stops);
    expect(await stateOf(first)).toBe('completed');

    await jobs.startWorkers();
    const second = await jobs.sendTo('held', { n: 4 });
    await waitFor('the handler to hold the second job', () => held.length === 2);
    held[1]!.finish();
    await waitFor('the second job completed', async () => (await stateOf(second)) === 'completed');
    await jobs.stop();
    await closeDatabase();
    expect(unhandled).toEqual([]);
  });

  it('fetched once the stop began, is handed back for a retry without running; on its last try, runs', async () => {
    const handedBack = await fetchHeldAcrossStop(2);
    expect(handedBack.ran).toEqual([]);
    expect(await stateOf(handedBack.jobId)).toBe('retry');

    const lastTry = await fetchHeldAcrossStop(0);
    expect(lastTry.ran).toEqual([lastTry.jobId]);
    expect(await stateOf(lastTry.jobId)).toBe('completed');
    await closeDatabase();
    expect(unhandled).toEqual([]);
  });
});
