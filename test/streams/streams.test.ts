/**
 * Issue 11 in one process (API, worker and runtime together; the scale-out file proves the
 * same log stream across processes): log streams with resumption, application events,
 * application logs (scrubbed, searchable, rotated, kept across a restart), rollback under
 * load, one-off runs with their configuration, exit code and timeout.
 */
import { readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { localRuntime } from '../helpers/local-runtime.js';
import { routerGet } from '../helpers/router-get.js';
import { openSse } from '../helpers/sse-client.js';
import { AppLogsRepository } from '../../src/modules/app-logs/app-logs.repository.js';
import { waitFor } from '../helpers/wait.js';
import { deployableApp, loadDuring, NODE_APP, settled, type Deployable } from '../pipeline-deploy/fixtures.js';

const MAX_LOG_BYTES = 64 * 1024;
const SECRET = 'tok-very-secret-123';

let h: Harness;
let alice: TestUser;
let base: string;

beforeAll(async () => {
  h = await createHarness(
    {
      ROUTER_HOST: '127.0.0.1',
      ROUTER_PORT: 0,
      RUNTIME_RESTART_BACKOFF_MS: 50,
      RUNTIME_STOP_GRACE_MS: 2000,
      ROUTER_DRAIN_TIMEOUT_MS: 5000,
      PIPELINE_CONCURRENCY: 4,
      APP_LOG_MAX_BYTES_PER_APP: MAX_LOG_BYTES,
    },
    { jobs: true, runtime: true },
  );
  alice = await h.user();
  base = await h.app.listen({ host: '127.0.0.1', port: 0 });
}, 60_000);
afterAll(async () => {
  await h?.close();
});

const hostOf = (d: Deployable) => `${d.slugs.app}.${d.slugs.project}.${d.slugs.org}.localhost`;
const routerPort = () => localRuntime(h.ctx).router.port;
const routerGetBody = async (app: Deployable) => (await routerGet(routerPort(), hostOf(app))).body;
const api = async (method: string, url: string, payload?: unknown, user = alice) => {
  const r = await h.app.inject({
    method: method as 'GET',
    url: `/v1${url}`,
    headers: user.headers,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
  return { status: r.statusCode, body: r.body ? r.json() : undefined };
};
const deploy = async (releaseId: string) => {
  const r = await api('POST', `/releases/${releaseId}/deploy`);
  expect(r.status).toBe(202);
  return r.body.deployment_id as string;
};
/** The deployment log as `GET /log` shows it, each line without its time stamp. */
const logLines = async (path: string) => {
  const text = (await api('GET', path)).body.log_text as string;
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => l.replace(/^\d{4}-\d{2}-\d{2}T[\d:.]+Z /, ''));
};

describe('OpenAPI', () => {
  it('documents every stream as text/event-stream and the new routes with their schemas', async () => {
    const doc = (await h.app.inject({ method: 'GET', url: '/v1/openapi.json' })).json();
    const streams = [
      '/v1/images/{image_id}/log/stream',
      '/v1/deployments/{deployment_id}/log/stream',
      '/v1/runs/{run_id}/log/stream',
      '/v1/workspaces/{workspace}/projects/{project}/envs/{env}/deploys/{deploy_id}/log/stream',
      '/v1/applications/{application_id}/events',
      '/v1/applications/{application_id}/logs/stream',
    ];
    for (const path of streams) expect(Object.keys(doc.paths[path].get.responses['200'].content), path).toEqual(['text/event-stream']);
    expect(doc.paths['/v1/applications/{application_id}/rollback'].post.responses['202']).toBeDefined();
    expect(doc.paths['/v1/applications/{application_id}/runs'].post.requestBody).toBeDefined();
    expect(doc.paths['/v1/applications/{application_id}/logs'].get.parameters.map((p: { name: string }) => p.name)).toEqual(
      expect.arrayContaining(['since', 'until', 'process', 'search', 'limit']),
    );
  });
});

describe('log streams', () => {
  it("follows a deployment's log from before it starts to its end, and resumes after a dropped connection with no gap or repeat", async () => {
    const app = await deployableApp(h, alice, { health_check_path: '/health' });
    const rel = await app.release({ 'app.js': NODE_APP('v1') }, 'web: node app.js\nrelease: echo migrating with $API_TOKEN\n');
    const id = await deploy(rel);
    const whole = await openSse(`${base}/v1/deployments/${id}/log/stream`, alice.headers);
    expect(whole.status).toBe(200);
    // A second client drops after three lines and comes back with Last-Event-ID.
    const first = await openSse(`${base}/v1/deployments/${id}/log/stream`, alice.headers);
    await first.until((e) => e.id === '3', 'three lines');
    first.close();
    const lastSeen = first.events.filter((e) => e.event === 'line').at(-1)!.id!;
    const resumed = await openSse(`${base}/v1/deployments/${id}/log/stream?last_event_id=0`, {
      ...alice.headers,
      'last-event-id': lastSeen,
    });

    const end = await whole.until((e) => e.event === 'end', 'the end event');
    await whole.ended;
    await resumed.ended;
    expect(end.data).toMatchObject({ status: 'complete', error_detail: null });
    const expected = await logLines(`/deployments/${id}/log`);
    const streamed = whole.events.filter((e) => e.event === 'line');
    expect(streamed.map((e) => e.data.line)).toEqual(expected);
    expect(streamed.map((e) => e.id)).toEqual(expected.map((_, i) => String(i + 1)));
    expect(streamed.every((e) => !Number.isNaN(Date.parse(e.data.timestamp)))).toBe(true);
    expect(expected.join('\n')).toContain('release | migrating with **secret**');
    expect(expected.join('\n')).not.toContain(SECRET);

    const firstLines = first.events.filter((e) => e.event === 'line' && Number(e.id) <= Number(lastSeen));
    const rest = resumed.events.filter((e) => e.event === 'line');
    expect([...firstLines, ...rest].map((e) => e.data.line)).toEqual(expected);
    expect(resumed.events.at(-1)!.event).toBe('end');

    // A finished deployment's stream replays and ends at once; a stranger sees nothing.
    const again = await openSse(`${base}/v1/deployments/${id}/log/stream`, alice.headers);
    await again.ended;
    expect(again.events.filter((e) => e.event === 'line')).toHaveLength(expected.length);
    const mallory = await h.user();
    const denied = await openSse(`${base}/v1/deployments/${id}/log/stream`, mallory.headers);
    expect([403, 404]).toContain(denied.status);
    await denied.ended;
  }, 90_000);

  it('leaves no listener behind when clients disconnect', async () => {
    const app = await deployableApp(h, alice);
    const rel = await app.release({ 'app.js': NODE_APP('v1') }, 'web: node app.js\n');
    const id = await deploy(rel);
    await settled(h, alice, id);
    const events = await Promise.all(
      Array.from({ length: 5 }, () => openSse(`${base}/v1/applications/${app.appId}/events`, alice.headers)),
    );
    await waitFor('five subscriptions', async () => subscriberCount() >= 5);
    for (const e of events) e.close();
    await waitFor('no subscription left', async () => subscriberCount() === 0);
  }, 60_000);
});

/** The process's live stream subscriptions (the LISTEN fan-out). */
function subscriberCount(): number {
  return h.app.notifications.subscriberCount;
}

describe('application events', () => {
  it("shows a deployment's state changes and resumes from Last-Event-ID", async () => {
    const app = await deployableApp(h, alice);
    const rel = await app.release({ 'app.js': NODE_APP('v1') }, 'web: node app.js\n');
    const events = await openSse(`${base}/v1/applications/${app.appId}/events`, alice.headers);
    const id = await deploy(rel);
    await events.until(
      (e) => e.event === 'deployment.updated' && e.data.id === id && e.data.status === 'complete',
      'the complete deployment',
    );
    events.close();
    const mine = events.events.filter((e) => e.event === 'deployment.updated' && e.data.id === id);
    expect(mine.map((e) => e.data.status)).toEqual(['queued', 'deploying', 'complete']);
    for (const e of mine) expect(e.data).toMatchObject({ kind: 'deployment.updated', application_id: app.appId, id });
    expect(mine.every((e) => !Number.isNaN(Date.parse(e.data.at)))).toBe(true);

    // Resume after the first event: the rest, each once.
    const resumed = await openSse(`${base}/v1/applications/${app.appId}/events`, { ...alice.headers, 'last-event-id': mine[0]!.id! });
    await resumed.until((e) => e.data.id === id && e.data.status === 'complete', 'the replayed complete');
    resumed.close();
    expect(resumed.events.filter((e) => e.data.id === id).map((e) => e.data.status)).toEqual(['deploying', 'complete']);
  }, 60_000);
});

describe('application log rotation', () => {
  it('keeps a chatty application within its size limit, dropping the oldest lines', async () => {
    const app = await deployableApp(h, alice, { health_check_path: '/health' });
    const chatty = `${NODE_APP('v1')}\nfor (let i = 0; i < 3000; i++) console.log('line ' + String(i).padStart(5, '0') + ' ' + 'x'.repeat(80));\n`;
    const rel = await app.release({ 'app.js': chatty }, 'web: node app.js\n');
    await settled(h, alice, await deploy(rel));
    await waitFor(
      'the last chatty line',
      async () => (await api('GET', `/applications/${app.appId}/logs?search=line%2002999`)).body.items.length === 1,
      30_000,
    );
    // Rotation runs right after a batch that brings a quarter of the limit or more is stored: the
    // lines kept settle within the limit (plus less than one batch), the oldest gone.
    const storedNow = async () =>
      (
        await sql<{ bytes: number; n: number }>`SELECT coalesce(sum(octet_length(line) + 100), 0)::int AS bytes, count(*)::int AS n
          FROM app_log_lines WHERE application_id = ${app.appId}`.execute(h.ctx.db)
      ).rows[0]!;
    const stored = {
      rows: [
        await waitFor(
          'the rotation',
          async () => {
            const s = await storedNow();
            return s.bytes <= MAX_LOG_BYTES * 1.25 + 20_000 ? s : null;
          },
          30_000,
        ),
      ],
    };
    expect(stored.rows[0]!.n).toBeLessThan(3000);
    expect((await api('GET', `/applications/${app.appId}/logs?search=line%2000000`)).body.items).toHaveLength(0);
    // The runtime's own copy on disk (one file per instance) is rotated at the same size: one current file and one older.
    const instance = await h.ctx.db.selectFrom('instances').select('id').where('application_id', '=', app.appId).executeTakeFirstOrThrow();
    const logDir = join(h.dataDir, 'runtime', 'logs');
    const files = readdirSync(logDir).filter((f) => f.startsWith(instance.id));
    expect(files.sort()).toEqual([`${instance.id}.log`, `${instance.id}.log.1`]);
    for (const f of files) expect(statSync(join(logDir, f)).size).toBeLessThanOrEqual(MAX_LOG_BYTES + 1024);
  }, 60_000);
});

describe('rollback', () => {
  it('serves the previous release and its configuration again with no failed request, then refuses a release whose image is gone', async () => {
    const app = await deployableApp(h, alice, { health_check_path: '/health' });
    const v1 = await app.release({ 'app.js': NODE_APP('v1') }, 'web: node app.js\n');
    await settled(h, alice, await deploy(v1));
    const v2 = await app.release({ 'app.js': NODE_APP('v2') }, 'web: node app.js\n');
    // v2 was released with another GREETING (frozen into the release).
    await h.ctx.db
      .updateTable('releases')
      .set({ configuration_sealed: h.ctx.secrets.seal(JSON.stringify({ values: { GREETING: 'howdy', API_TOKEN: SECRET } })) })
      .where('id', '=', v2)
      .execute();
    await settled(h, alice, await deploy(v2));
    await waitFor('v2 serving', async () => (await routerGetBody(app)) === 'v2:howdy');

    let finished!: () => void;
    const load = loadDuring(
      routerPort(),
      hostOf(app),
      new Promise<void>((r) => {
        finished = r;
      }),
    );
    const r = await api('POST', `/applications/${app.appId}/rollback`, {});
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ is_rollback: true, rollback_of: v2, release: { id: v1, version: 1 }, status: 'deploying' });
    const done = await settled(h, alice, r.body.id);
    finished();
    const report = await load;
    expect(done).toMatchObject({ status: 'complete', is_rollback: true, rollback_of: v2 });
    expect(report.failed, report.failures.join('\n')).toBe(0);
    expect(report.total).toBeGreaterThan(10);
    expect(await routerGetBody(app)).toBe('v1:hello');
    const listed = (await api('GET', `/applications/${app.appId}/deployments`)).body.items;
    expect(listed[0]).toMatchObject({ id: r.body.id, is_rollback: true });

    // v1 serves now: rolling back to v2 by id works the same way; a release without its image cannot.
    const image = await h.ctx.db
      .selectFrom('releases as r')
      .innerJoin('images as i', 'i.id', 'r.image_ref')
      .select('i.artifact_path')
      .where('r.id', '=', v2)
      .executeTakeFirstOrThrow();
    rmSync(image.artifact_path!, { recursive: true, force: true });
    const gone = await api('POST', `/applications/${app.appId}/rollback`, { release_id: v2 });
    expect(gone.status).toBe(409);
    expect(gone.body.message).toMatch(/image .* is gone/);
    expect((await api('POST', `/applications/${app.appId}/rollback`, { release_id: v1 })).status).toBe(409);
    expect((await api('POST', `/applications/${app.appId}/rollback`, { nope: 1 })).status).toBe(422);
    const mallory = await h.user();
    expect([403, 404]).toContain((await api('POST', `/applications/${app.appId}/rollback`, {}, mallory)).status);
  }, 120_000);
});

describe('one-off runs', () => {
  it("runs a command in the serving release's configuration, scrubbed, with its exit code; a run past its timeout is killed", async () => {
    const app = await deployableApp(h, alice, { health_check_path: '/health' });
    const rel = await app.release({ 'app.js': NODE_APP('v1') }, 'web: node app.js\n');
    await settled(h, alice, await deploy(rel));

    const r = await api('POST', `/applications/${app.appId}/runs`, {
      command: 'echo "GREETING=$GREETING"; echo "API_TOKEN=$API_TOKEN"; exit 3',
    });
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ application_id: app.appId, status: 'pending', process_type: 'web', exit_code: null });
    const stream = await openSse(`${base}/v1/runs/${r.body.id}/log/stream`, alice.headers);
    const end = await stream.until((e) => e.event === 'end', 'the end of the run');
    await stream.ended;
    expect(end.data).toMatchObject({ status: 'failed', exit_code: 3 });
    const lines = stream.events.filter((e) => e.event === 'line').map((e) => e.data.line);
    expect(lines).toContain('GREETING=hello');
    expect(lines).toContain('API_TOKEN=**secret**');
    const run = (await api('GET', `/runs/${r.body.id}`)).body;
    expect(run).toMatchObject({ status: 'failed', exit_code: 3, command: r.body.command, error_code: 'command_failed' });
    expect(run.started_at).toBeTruthy();
    expect(run.finished_at).toBeTruthy();
    const log = (await api('GET', `/runs/${r.body.id}/log`)).body;
    expect(log).toMatchObject({ status: 'failed', exit_code: 3, error: true, error_code: 'command_failed' });
    expect(log.log_text).toContain('API_TOKEN=**secret**');
    expect(log.log_text).not.toContain(SECRET);

    const slow = await api('POST', `/applications/${app.appId}/runs`, {
      command: 'echo started; sleep 30; echo never',
      timeout_seconds: 1,
    });
    const timedOut = await waitFor(
      'the timeout',
      async () => {
        const d = (await api('GET', `/runs/${slow.body.id}`)).body;
        return d.finished_at ? d : null;
      },
      30_000,
    );
    expect(timedOut).toMatchObject({ status: 'timed_out', error_code: 'command_timeout' });
    const slowLog = (await api('GET', `/runs/${slow.body.id}/log`)).body.log_text as string;
    expect(slowLog).toMatch(/Z started$/m);
    expect(slowLog).not.toMatch(/Z never$/m);

    const list = (await api('GET', `/applications/${app.appId}/runs`)).body;
    expect(list.items.map((i: { id: string }) => i.id)).toEqual([slow.body.id, r.body.id]);
    expect((await api('POST', `/applications/${app.appId}/runs`, { command: '' })).status).toBe(422);
    const mallory = await h.user();
    expect([403, 404]).toContain((await api('POST', `/applications/${app.appId}/runs`, { command: 'id' }, mallory)).status);
    expect([403, 404]).toContain((await api('GET', `/runs/${r.body.id}`, undefined, mallory)).status);
  }, 90_000);
});

describe('application logs', () => {
  it('captures output with process, instance and stream, scrubbed, searchable, streamed, and kept after a restart', async () => {
    const app = await deployableApp(h, alice, { health_check_path: '/health' });
    const appJs = `${NODE_APP('v1')}\nconsole.error('warning on stderr');\nsetInterval(() => console.log('tick ' + Date.now()), 200);\n`;
    const rel = await app.release({ 'app.js': appJs }, 'web: node app.js\n');
    const stream = await openSse(`${base}/v1/applications/${app.appId}/logs/stream?process=web`, alice.headers);
    await settled(h, alice, await deploy(rel));
    const boot = await stream.until((e) => e.event === 'log' && e.data.line.startsWith('boot v1'), 'the boot line');
    expect(boot.data).toMatchObject({ process_type: 'web', stream: 'stdout', line: 'boot v1 secret=**secret**' });
    expect(boot.id).toBe(boot.data.id);
    const stderr = await stream.until((e) => e.data.line === 'warning on stderr', 'the stderr line');
    expect(stderr.data.stream).toBe('stderr');
    stream.close();

    const found = await api('GET', `/applications/${app.appId}/logs?search=BOOT%20v1`);
    expect(found.status).toBe(200);
    expect(found.body.items).toHaveLength(1);
    expect(found.body.items[0]).toMatchObject({ process_type: 'web', stream: 'stdout', line: 'boot v1 secret=**secret**' });
    expect(found.body.items[0].instance_id).toBeTruthy();
    const recent = await api('GET', `/applications/${app.appId}/logs?limit=3&process=web`);
    expect(recent.body.items).toHaveLength(3);
    const ids = recent.body.items.map((i: { id: string }) => Number(i.id));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect((await api('GET', `/applications/${app.appId}/logs?process=worker`)).body.items).toHaveLength(0);
    expect((await api('GET', `/applications/${app.appId}/logs?limit=1001`)).status).toBe(422);
    const all = await h.ctx.db.selectFrom('app_log_lines').select('line').where('application_id', '=', app.appId).execute();
    expect(all.some((l) => l.line.includes(SECRET))).toBe(false);

    // A restart: the runtime stops (instances with it), a new API process reads the same database.
    await h.ctx.runtime!.shutdown();
    const restarted = await buildApp({ ...h.ctx, runtime: undefined, jobs: undefined }, { logger: false });
    try {
      const r = await restarted.inject({ method: 'GET', url: `/v1/applications/${app.appId}/logs?search=boot`, headers: alice.headers });
      expect(r.json().items.map((i: { line: string }) => i.line)).toEqual(['boot v1 secret=**secret**']);
    } finally {
      await restarted.close();
    }
  }, 90_000);
});

describe('log search over many lines', () => {
  it('finds a rare phrase past the newest lines through the index, a common word among the newest, nothing where nothing is', async () => {
    const app = await deployableApp(h, alice);
    // Stored by the platform's own writer, as the instances' output would be: 6,000 lines over the last
    // hour, a rare phrase first (older than the newest 5,000 a search reads in order) and last.
    const now = Date.now();
    const line = (i: number, text: string, process = 'web') => ({
      application_id: app.appId,
      environment_id: app.envId,
      instance_id: `${process}.1`,
      process_type: process,
      stream: 'stdout' as const,
      line: text,
      logged_at: new Date(now - (6000 - i) * 500),
    });
    const lines = [line(0, 'ERROR payment failed early', 'worker')];
    for (let i = 1; i < 5999; i++) lines.push(line(i, `GET /items/${i} 200 100%`));
    lines.push(line(5999, 'ERROR payment failed late'));
    await new AppLogsRepository(h.ctx.db).insert(lines);
    const search = async (query: string) =>
      ((await api('GET', `/applications/${app.appId}/logs?${query}`)).body.items as { line: string }[]).map((l) => l.line);

    expect(await search('search=payment%20FAILED')).toEqual(['ERROR payment failed early', 'ERROR payment failed late']);
    expect(await search('search=payment%20failed&process=worker')).toEqual(['ERROR payment failed early']);
    expect(await search(`search=payment%20failed&since=${new Date(now - 60_000).toISOString()}`)).toEqual(['ERROR payment failed late']);
    expect(await search('search=items&limit=3')).toEqual([
      'GET /items/5996 200 100%',
      'GET /items/5997 200 100%',
      'GET /items/5998 200 100%',
    ]);
    expect(await search('search=no-such-word')).toEqual([]);
    // `%` and `_` are text, not patterns.
    expect(await search('search=0%25&limit=1')).toEqual(['GET /items/5998 200 100%']);
    expect(await search('search=payment_failed')).toEqual([]);
    // The index behind it was made by the database's owner, no superuser (as the platform's role is).
    const index = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_indexes WHERE indexname = 'app_log_lines_search'`.execute(
      h.ctx.db,
    );
    expect(index.rows[0]!.n).toBe(1);
  });
});
