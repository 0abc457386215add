import { sql } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobStore } from '../../src/platform/jobs/job-store.js';
import type { PipelineJobData } from '../../src/platform/jobs/types.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

let h: Harness;
beforeAll(async () => {
  h = await createHarness({ PIPELINE_CONCURRENCY: 3 }, { jobs: true });
});
afterAll(async () => {
  await h?.close();
});

async function jobState(id: string) {
  const { rows } = await sql<{
    state: string;
  }>`select state from pipeline_jobs where id = ${id}`.execute(h.ctx.db);
  return rows[0]?.state;
}

describe('pipeline jobs', () => {
  it('runs one job per application at a time, in order, and applications side by side', async () => {
    const jobs = h.ctx.jobs!;
    const events: string[] = [];
    let activeA = 0;
    let maxActiveA = 0;
    jobs.register('order-test', async (data) => {
      const tag = String(data.tag);
      if (data.applicationId === appA) {
        activeA++;
        maxActiveA = Math.max(maxActiveA, activeA);
      }
      events.push(`start ${tag}`);
      await new Promise((r) => setTimeout(r, Number(data.ms)));
      events.push(`end ${tag}`);
      if (data.applicationId === appA) activeA--;
    });
    const appA = uuidv7();
    const appB = uuidv7();
    await jobs.enqueue('order-test', { applicationId: appA, tag: 'a1', ms: 1000 });
    await jobs.enqueue('order-test', { applicationId: appA, tag: 'a2', ms: 50 });
    await jobs.enqueue('order-test', { applicationId: appA, tag: 'a3', ms: 50 });
    await jobs.enqueue('order-test', { applicationId: appB, tag: 'b1', ms: 50 });
    await waitFor('all four jobs to end', () => events.filter((e) => e.startsWith('end')).length === 4, { timeout: 10_000, every: 25 });
    expect(maxActiveA).toBe(1);
    const aOrder = events.filter((e) => e.startsWith('start a')).map((e) => e.slice(6));
    expect(aOrder).toEqual(['a1', 'a2', 'a3']);
    // b1 did not wait behind a1 (which was still running) even though it was queued after a2, a3.
    expect(events.indexOf('end b1')).toBeLessThan(events.indexOf('end a1'));
  });

  /**
   * A worker that took the first of an application's two jobs and then died: claimed as a
   * live worker on another host, then its heartbeat is made stale.
   */
  async function claimAsDeadWorker(kind: string, app: string) {
    const deadWorker = `deadhost:999999:${uuidv7().slice(-8)}`;
    await h.ctx.db.insertInto('workers').values({ id: deadWorker, hostname: 'deadhost', pid: 999999 }).execute();
    // Our workers skip a kind nobody registered: the dead worker is the only taker.
    const firstId = await h.ctx.jobs!.enqueue(kind, { applicationId: app, tag: 'first' });
    const claimed = await new JobStore(h.ctx.db).fetchNext(deadWorker, [kind]);
    expect(claimed?.id).toBe(firstId);
    return {
      firstId,
      die: () =>
        h.ctx.db
          .updateTable('workers')
          .set({ heartbeat_at: new Date(Date.now() - 10 * 60_000) })
          .where('id', '=', deadWorker)
          .execute(),
      deadWorker,
    };
  }

  it('fails the job of a dead worker, settles its record, and unblocks the application', async () => {
    const jobs = h.ctx.jobs!;
    const interrupted: PipelineJobData[] = [];
    const ran: string[] = [];
    const app = uuidv7();
    const { firstId, die, deadWorker } = await claimAsDeadWorker('recover-test', app);
    // When the second job runs, the first (same application) must already be settled.
    jobs.register(
      'recover-test',
      async (data) => {
        ran.push(`${data.tag} after ${interrupted.length} settled`);
      },
      {
        onInterrupted: async (data) => {
          interrupted.push(data);
        },
      },
    );
    const secondId = await jobs.enqueue('recover-test', { applicationId: app, tag: 'second' });
    // A younger job of another application runs: the workers have looked past `second`, which
    // stays waiting behind the job its (still live) worker holds.
    await jobs.enqueue('recover-test', { applicationId: uuidv7(), tag: 'probe' });
    await waitFor("the other application's job to run", () => ran.length === 1, { timeout: 10_000, every: 25 });
    expect(ran).toEqual(['probe after 0 settled']);
    expect(await jobState(secondId)).toBe('created');
    // Recovery (on start and with every heartbeat) settles the dead worker's job.
    await die();
    await waitFor('the second job to run', () => ran.length === 2, { timeout: 10_000, every: 25 });
    expect(ran).toEqual(['probe after 0 settled', 'second after 1 settled']);
    expect(interrupted.map((d) => d.tag)).toEqual(['first']);
    expect(await jobState(firstId)).toBe('failed');
    // The dead worker is forgotten once its jobs are settled.
    await waitFor(
      'the dead worker to be forgotten',
      async () => (await h.ctx.db.selectFrom('workers').select('id').where('id', '=', deadWorker).execute()).length === 0,
      { timeout: 10_000, every: 25 },
    );
  });

  it('can put an interrupted job back at the head of its queue', async () => {
    const jobs = h.ctx.jobs!;
    const ran: string[] = [];
    let interruptions = 0;
    const app = uuidv7();
    const { die } = await claimAsDeadWorker('retry-test', app);
    jobs.register(
      'retry-test',
      async (data) => {
        ran.push(String(data.tag));
      },
      {
        onInterrupted: async () => {
          interruptions++;
          return 'retry';
        },
      },
    );
    await jobs.enqueue('retry-test', { applicationId: app, tag: 'second' });
    await die();
    await waitFor('both jobs to run', () => ran.length === 2, { timeout: 10_000, every: 25 });
    expect(interruptions).toBe(1);
    expect(ran).toEqual(['first', 'second']);
  });

  it('retries a completion that the database refuses, so the job does not stay active', async () => {
    const jobs = h.ctx.jobs!;
    // A real failure of the completion write: a trigger refuses the first two attempts
    // for this kind (a sequence counts them; it is not rolled back with the failed update).
    await sql`CREATE SEQUENCE completion_attempts`.execute(h.ctx.db);
    await sql
      .raw(
        `
      CREATE FUNCTION refuse_first_completions() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF nextval('completion_attempts') <= 2 THEN RAISE EXCEPTION 'completion refused by the test'; END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER refuse_first_completions BEFORE UPDATE ON pipeline_jobs FOR EACH ROW
        WHEN (NEW.state = 'completed' AND OLD.kind = 'flaky-completion') EXECUTE FUNCTION refuse_first_completions();`,
      )
      .execute(h.ctx.db);
    try {
      let ran = 0;
      jobs.register('flaky-completion', async () => {
        ran++;
      });
      const id = await jobs.enqueue('flaky-completion', { applicationId: uuidv7() });
      await waitFor('the job to be completed', async () => (await jobState(id)) === 'completed', { timeout: 15_000, every: 50 });
      expect(ran).toBe(1);
      const { rows } = await sql<{ last_value: string }>`SELECT last_value FROM completion_attempts`.execute(h.ctx.db);
      expect(Number(rows[0]!.last_value)).toBe(3);
      expect(h.logs()).toContain('completing a pipeline job failed; retrying');
      expect(h.logs()).toContain('completion refused by the test');
      // The run record goes only once the job is settled.
      await waitFor(
        'the run record to go',
        async () => (await h.ctx.db.selectFrom('job_runs').select('job_id').where('job_id', '=', id).execute()).length === 0,
      );
    } finally {
      await sql
        .raw(
          'DROP TRIGGER refuse_first_completions ON pipeline_jobs; DROP FUNCTION refuse_first_completions(); DROP SEQUENCE completion_attempts',
        )
        .execute(h.ctx.db);
    }
  });
});
