/**
 * Issue 17, scheduled jobs through the HTTP API and the real pipeline: cron entries run as
 * one-off runs of the serving release on time, one at a time per entry, with their log and
 * exit code; across a platform restart (the platform stopped, a new one started on the same
 * database) no occurrence runs twice and missed ones are not piled up (one catch-up at most).
 * Schedules use the seconds field (CRON_SECONDS_FIELD) so the test waits seconds, not minutes.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CronScheduler, nextOccurrence } from '../../src/modules/cron/index.js';
import { OneOffRunsService } from '../../src/pipeline/index.js';
import { createCoreServices } from '../../src/services.js';
import { createRepositories } from '../../src/repositories.js';
import { TestRepo } from '../helpers/git-repo.js';
import { startPlatformProcess, type PlatformProcess } from '../helpers/platform-process.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { createApp } from '../pipeline-build/fixtures.js';
import { waitFor } from '../helpers/wait.js';
import { deployableApp, NODE_APP, settled, type Deployable } from '../pipeline-deploy/fixtures.js';

const PERIOD_SECONDS = 3;

let h: Harness;
let alice: TestUser;
let mallory: TestUser;
let platform: PlatformProcess | null = null;

beforeAll(async () => {
  // The harness itself only serves the API (no workers, so no scheduler): platforms come and go beside it.
  h = await createHarness({
    ROUTER_HOST: '127.0.0.1',
    ROUTER_PORT: 0,
    CRON_SECONDS_FIELD: true,
    CRON_POLL_MS: 100,
    RUNTIME_STOP_GRACE_MS: 500,
  });
  alice = await h.user();
  mallory = await h.user();
  platform = await startPlatformProcess(h);
}, 60_000);
afterAll(async () => {
  await platform?.stop();
  await h?.close();
});

const api = async (method: string, url: string, payload?: unknown, user = alice) => {
  const r = await h.app.inject({
    method: method as 'GET',
    url: `/v1${url}`,
    headers: user.headers,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
  return { status: r.statusCode, body: r.body ? r.json() : undefined };
};
const dbNow = async () => (await sql<{ now: Date }>`SELECT now()`.execute(h.ctx.db)).rows[0]!.now;

async function deployedApp(): Promise<Deployable> {
  const app = await deployableApp(h, alice);
  const rel = await app.release({ 'app.js': NODE_APP('v1') }, 'web: node app.js\n');
  const r = await platform!.app.inject({ method: 'POST', url: `/v1/releases/${rel}/deploy`, headers: alice.headers });
  expect(r.statusCode).toBe(202);
  const d = await settled(h, alice, r.json().deployment_id);
  expect(d.status, d.deploy_log).toBe('complete');
  return app;
}

interface RunView {
  id: string;
  status: string;
  exit_code: number | null;
  cron_entry_id: string;
  scheduled_for: string;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}
const runsOf = async (app: Deployable, name: string): Promise<RunView[]> => {
  const r = await api('GET', `/applications/${app.appId}/cron/${name}/runs?per_page=100`);
  expect(r.status).toBe(200);
  return (r.body.items as RunView[]).reverse();
};

describe('cron entries API', () => {
  it('creates, lists, replaces and removes entries; refuses bad schedules (422) and other organizations (403/404)', async () => {
    const app = await deployableApp(h, alice);
    const put = await api('PUT', `/applications/${app.appId}/cron/nightly`, { schedule: '0 3 * * *', command: 'echo nightly' });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body).toMatchObject({
      name: 'nightly',
      schedule: '0 3 * * *',
      command: 'echo nightly',
      source: 'api',
      timeout_seconds: 600,
    });
    expect(put.body.next_run_at).toMatch(/T03:00:00\.000Z$/);
    const replaced = await api('PUT', `/applications/${app.appId}/cron/nightly`, {
      schedule: '@hourly',
      command: 'echo hourly',
      timeout_seconds: 30,
    });
    expect(replaced.body).toMatchObject({ id: put.body.id, schedule: '@hourly', command: 'echo hourly', timeout_seconds: 30 });
    expect(replaced.body.next_run_at).toMatch(/:00:00\.000Z$/);
    expect((await api('GET', `/applications/${app.appId}/cron`)).body).toEqual([replaced.body]);
    expect((await api('GET', `/applications/${app.appId}/cron?environment=production`)).body).toEqual([replaced.body]);

    for (const schedule of ['61 * * * *', 'every minute', '* * * *', '* * * * * * *', '']) {
      const r = await api('PUT', `/applications/${app.appId}/cron/bad`, { schedule, command: 'true' });
      expect(r.status, schedule).toBe(422);
      expect(r.body).toMatchObject({ status: 422, message: expect.any(String) });
    }
    expect((await api('PUT', `/applications/${app.appId}/cron/Bad Name`, { schedule: '@daily', command: 'true' })).status).toBe(404);
    expect((await api('PUT', `/applications/${app.appId}/cron/x`, { schedule: '@daily', command: 'true', extra: 1 })).status).toBe(422);
    expect((await api('PUT', `/applications/${app.appId}/cron/x?environment=nope`, { schedule: '@daily', command: 'true' })).status).toBe(
      404,
    );
    expect((await api('GET', `/applications/${app.appId}/cron`)).body).toHaveLength(1);

    for (const [method, url] of [
      ['GET', `/applications/${app.appId}/cron`],
      ['PUT', `/applications/${app.appId}/cron/nightly`],
      ['DELETE', `/applications/${app.appId}/cron/nightly`],
      ['GET', `/applications/${app.appId}/cron/nightly/runs`],
    ] as const) {
      const r = await api(method, url, method === 'PUT' ? { schedule: '@daily', command: 'id' } : undefined, mallory);
      expect([403, 404], `${method} ${url}`).toContain(r.status);
    }
    expect((await api('GET', `/applications/${app.appId}/cron`)).body).toEqual([replaced.body]);
    expect((await api('DELETE', `/applications/${app.appId}/cron/nightly`)).body).toEqual({ ok: true });
    expect((await api('DELETE', `/applications/${app.appId}/cron/nightly`)).status).toBe(404);
    expect((await api('GET', `/applications/${app.appId}/cron/nightly/runs`)).status).toBe(404);

    const doc = (await h.app.inject({ method: 'GET', url: '/v1/openapi.json' })).json();
    expect(doc.paths['/v1/applications/{application_id}/cron/{name}'].put.requestBody).toBeDefined();
    expect(doc.paths['/v1/applications/{application_id}/cron/{name}/runs'].get).toBeDefined();
  });

  it('reads five fields (or a macro) in UTC; the seconds field only where the operator allows it', () => {
    expect(nextOccurrence('*/15 * * * *', new Date('2026-01-01T10:07:30Z'), false).toISOString()).toBe('2026-01-01T10:15:00.000Z');
    expect(nextOccurrence('@daily', new Date('2026-01-01T10:07:30Z'), false).toISOString()).toBe('2026-01-02T00:00:00.000Z');
    expect(nextOccurrence('*/5 * * * * *', new Date('2026-01-01T10:07:31Z'), true).toISOString()).toBe('2026-01-01T10:07:35.000Z');
    expect(() => nextOccurrence('*/5 * * * * *', new Date(), false)).toThrow(/5 fields/);
  });
});

describe('cron runs (one-off runs of the serving release)', () => {
  it('runs entries on time with their log and exit code, one at a time, and across a restart without double or piled-up runs', async () => {
    const ticking = await deployedApp();
    const slow = await deployedApp();
    const tick = await api('PUT', `/applications/${ticking.appId}/cron/tick`, {
      schedule: `*/${PERIOD_SECONDS} * * * * *`,
      command: 'echo "tick GREETING=$GREETING"; exit 3',
    });
    expect(tick.status).toBe(200);
    // Every second, but each run takes longer: the next occurrence waits for none, it is skipped.
    await api('PUT', `/applications/${slow.appId}/cron/slow`, { schedule: '* * * * * *', command: 'sleep 2.5; echo slow done' });

    const finished = (runs: RunView[]) => runs.filter((r) => r.finished_at);
    await waitFor('two finished tick runs', async () => finished(await runsOf(ticking, 'tick')).length >= 2, 60_000);

    // Each run: its log and exit code through the API.
    const first = finished(await runsOf(ticking, 'tick'))[0]!;
    expect(first).toMatchObject({ status: 'failed', exit_code: 3, cron_entry_id: tick.body.id });
    expect((await api('GET', `/runs/${first.id}`)).body).toMatchObject({ id: first.id, exit_code: 3, scheduled_for: first.scheduled_for });
    const log = (await api('GET', `/runs/${first.id}/log`)).body;
    expect(log).toMatchObject({ status: 'failed', exit_code: 3, error: true });
    expect(log.log_text).toContain('tick GREETING=hello');

    // The restart: the platform stops, stays down for more than two occurrences, and a new one starts on the same database.
    await platform!.stop();
    platform = null;
    const stoppedAt = await dbNow();
    const beforeStop = await runsOf(ticking, 'tick');
    // The occurrence the stopped platform did not take: the one the next platform owes.
    const owed = Date.parse((await api('GET', `/applications/${ticking.appId}/cron`)).body[0].next_run_at);
    expect(beforeStop.every((r) => Date.parse(r.scheduled_for) < owed)).toBe(true);
    await waitFor(
      'a downtime of more than two periods',
      async () => (await dbNow()).getTime() > stoppedAt.getTime() + 2.5 * PERIOD_SECONDS * 1000,
      { timeout: 30_000, every: 250 },
    );
    platform = await startPlatformProcess(h);
    const startedAt = await dbNow();
    expect(owed).toBeLessThan(startedAt.getTime() - PERIOD_SECONDS * 1000);
    await waitFor(
      'two tick runs scheduled after the restart',
      async () => finished(await runsOf(ticking, 'tick')).filter((r) => Date.parse(r.scheduled_for) > startedAt.getTime()).length >= 2,
      60_000,
    );

    const runs = await runsOf(ticking, 'tick');
    // One run per occurrence, each on an occurrence of the schedule, never before it.
    expect(new Set(runs.map((r) => r.scheduled_for)).size).toBe(runs.length);
    for (const r of runs) {
      expect(Date.parse(r.scheduled_for) % (PERIOD_SECONDS * 1000)).toBe(0);
      expect(Date.parse(r.created_at)).toBeGreaterThanOrEqual(Date.parse(r.scheduled_for));
    }
    // The runs before the stop are untouched; of the occurrences missed while down, only the owed one ran (once).
    expect(runs.filter((r) => Date.parse(r.scheduled_for) < owed).map((r) => r.id)).toEqual(beforeStop.map((r) => r.id));
    const caughtUp = runs.filter((r) => Date.parse(r.scheduled_for) >= owed && Date.parse(r.scheduled_for) <= startedAt.getTime());
    expect(caughtUp.map((r) => Date.parse(r.scheduled_for))).toEqual([owed]);
    // While a platform runs, the runs follow the schedule one period apart (each takes well under one).
    const after = runs.filter((r) => Date.parse(r.scheduled_for) > startedAt.getTime());
    expect(Date.parse(after[1]!.scheduled_for) - Date.parse(after[0]!.scheduled_for)).toBe(PERIOD_SECONDS * 1000);
    expect(after.every((r) => r.exit_code === 3)).toBe(true);

    // The slow entry never overlapped itself: each run started after the previous one finished.
    const slowRuns = (await runsOf(slow, 'slow')).filter((r) => r.started_at);
    expect(slowRuns.length).toBeGreaterThanOrEqual(2);
    for (let i = 1; i < slowRuns.length; i++) {
      const previousEnd = slowRuns[i - 1]!.finished_at;
      expect(previousEnd, 'the previous run had finished').not.toBeNull();
      expect(Date.parse(slowRuns[i]!.started_at!)).toBeGreaterThanOrEqual(Date.parse(previousEnd!));
    }
    const finishedSlow = slowRuns.filter((r) => r.status === 'succeeded');
    expect(finishedSlow.length).toBeGreaterThanOrEqual(1);
    expect((await api('GET', `/runs/${finishedSlow[0]!.id}/log`)).body.log_text).toContain('slow done');
    await api('DELETE', `/applications/${slow.appId}/cron/slow`);
    await api('DELETE', `/applications/${ticking.appId}/cron/tick`);
  }, 180_000);
});

describe('cron with several schedulers', () => {
  it('takes each occurrence once however many schedulers poll the database at once', async () => {
    const app = await deployedApp();
    const put = await api('PUT', `/applications/${app.appId}/cron/yearly`, { schedule: '0 0 1 1 *', command: 'echo once' });
    expect(put.status).toBe(200);
    // Due now (as after a downtime): the platform's own scheduler and two more race for it.
    const due = new Date(Date.UTC(2026, 0, 1));
    await h.ctx.db.updateTable('cron_entries').set({ next_run_at: due }).where('id', '=', put.body.id).execute();
    const repos = createRepositories(h.ctx.db);
    const runs = new OneOffRunsService(platform!.ctx, repos.oneOffRuns, repos.deployments, createCoreServices(h.ctx, repos).apps);
    const quiet = { info: () => {}, warn: () => {}, error: () => {} } as never;
    const schedulers = [1, 2].map(() => new CronScheduler(h.ctx.db, repos.cron, runs, { pollMs: 1000, allowSeconds: true }, quiet));
    const started = await Promise.all([...schedulers, ...schedulers].map((s) => s.tick()));
    const all = await waitFor('the run of the occurrence', async () => {
      const items = await runsOf(app, 'yearly');
      return items.length > 0 ? items : null;
    });
    expect(started.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(1);
    expect(all.map((r) => r.scheduled_for)).toEqual([due.toISOString()]);
    const entry = (await api('GET', `/applications/${app.appId}/cron`)).body.find((e: { name: string }) => e.name === 'yearly');
    expect(Date.parse(entry.next_run_at)).toBeGreaterThan(Date.now());
    expect(new Date(entry.next_run_at).toISOString()).toMatch(/-01-01T00:00:00\.000Z$/);
  });
});

describe('cron entries in slipway.json', () => {
  it('come with the deployed release (and run); the next deployment replaces them; a bad entry fails the build', async () => {
    const repo = new TestRepo();
    const files = (cron: unknown) => ({
      'server.js': 'require("http").createServer((q, s) => s.end("ok")).listen(process.env.PORT);\n',
      Procfile: 'web: node server.js\n',
      'slipway.json': JSON.stringify({ cron }),
    });
    repo.commit(files([{ name: 'report', schedule: '*/2 * * * * *', command: 'echo "manifest report"' }]));
    const t = await createApp(h, { github_repository: repo.dir, auto_deploy_branch: 'main' });
    const as = t.user;
    let deployments = 0;
    const deploy = async () => {
      const r = await platform!.app.inject({ method: 'POST', url: `/v1/applications/${t.appId}/deploy`, headers: as.headers });
      expect(r.statusCode, r.body).toBe(202);
      deployments++;
      const latest = await waitFor(
        'the chain deployment',
        async () => {
          const list = (await api('GET', `/applications/${t.appId}/deployments`, undefined, as)).body.items;
          return list?.length === deployments ? list[0] : null;
        },
        90_000,
      );
      const d = await settled(h, as, latest.id, 60_000);
      expect(d.status, d.deploy_log).toBe('complete');
    };
    try {
      await deploy();
      const entries = (await api('GET', `/applications/${t.appId}/cron`, undefined, as)).body;
      expect(entries).toMatchObject([{ name: 'report', schedule: '*/2 * * * * *', source: 'manifest' }]);
      const run = await waitFor(
        'a finished run of the manifest entry',
        async () =>
          (await api('GET', `/applications/${t.appId}/cron/report/runs`, undefined, as)).body.items.find((r: RunView) => r.finished_at),
        60_000,
      );
      expect(run).toMatchObject({ status: 'succeeded', exit_code: 0, error_code: null });
      expect((await api('GET', `/runs/${run.id}/log`, undefined, as)).body.log_text).toContain('manifest report');

      repo.commit(files([{ name: 'nightly', schedule: '0 3 * * *', command: 'echo nightly' }]));
      await deploy();
      expect((await api('GET', `/applications/${t.appId}/cron`, undefined, as)).body).toMatchObject([
        { name: 'nightly', schedule: '0 3 * * *', source: 'manifest' },
      ]);

      repo.commit(files([{ name: 'bad', schedule: 'every day', command: 'true' }]));
      const build = await platform!.app.inject({ method: 'POST', url: `/v1/images/${t.appId}/build`, headers: as.headers });
      expect(build.statusCode).toBe(202);
      const failed = await waitFor(
        'the failed build',
        async () => {
          const l = (await api('GET', `/images/${build.json().image_id}/log`, undefined, as)).body;
          return l.status === 'building' ? null : l;
        },
        60_000,
      );
      expect(failed.error).toBe(true);
      expect(failed.error_detail).toContain('slipway.json: cron[0]: schedule "every day"');
    } finally {
      repo.remove();
    }
  }, 180_000);
});
