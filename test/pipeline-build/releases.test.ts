import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openConfiguration } from '../../src/pipeline/release/release-freezer.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { TestRepo } from '../helpers/git-repo.js';
import { waitFor } from '../helpers/wait.js';
import { buildAndWait, createApp, nodeApp, setConfig, type TestApp } from './fixtures.js';

let h: Harness;
const repos: TestRepo[] = [];
beforeAll(async () => {
  h = await createHarness({}, { jobs: true });
});
afterAll(async () => {
  await h?.close();
  for (const r of repos) r.remove();
});

const SECRET = 'sk-live-5b1e0c9d7a';
const SECRET_2 = 'sk-live-rotated-77aa';

async function releaseAndWait(t: TestApp) {
  const res = await h.app.inject({ method: 'POST', url: `/v1/releases/${t.appId}/create`, headers: t.user.headers });
  expect(res.statusCode).toBe(202);
  const { release_id, version } = res.json();
  const log = await waitFor(`release ${release_id}`, async () => {
    const r = (await h.app.inject({ method: 'GET', url: `/v1/releases/${release_id}/log`, headers: t.user.headers })).json();
    return r.status === 'building' ? null : r;
  });
  const detail = (await h.app.inject({ method: 'GET', url: `/v1/releases/${release_id}/detail`, headers: t.user.headers })).json();
  return { release_id: release_id as string, version: version as number, log, detail };
}

async function configId(t: TestApp, name: string): Promise<string> {
  const list = (await h.app.inject({ method: 'GET', url: `/v1/configurations/${t.appId}`, headers: t.user.headers })).json();
  return list.find((v: { name: string }) => v.name === name).id;
}

describe('releases', () => {
  it('freezes the latest image, resolved configuration and process settings, with diffs against the previous release', async () => {
    const r = new TestRepo();
    repos.push(r);
    const firstSha = r.commit(nodeApp('v1'));
    const t = await createApp(h, { github_repository: r.dir, auto_deploy_branch: 'main', health_check_path: '/health' });
    await setConfig(h, t, 'PLAIN', 'one');
    await setConfig(h, t, 'API_KEY', SECRET, { secret: true });
    await setConfig(h, t, 'BUILD_GREETING', 'hi', { buildtime: true });
    await h.app.inject({
      method: 'POST',
      url: `/v1/applications/${t.appId}/scale`,
      headers: t.user.headers,
      payload: { process_counts: { web: 2 } },
    });
    const image1 = await buildAndWait(h, t);
    expect(image1.detail.built).toBe(true);

    const first = await releaseAndWait(t);
    expect(first.log.error_detail).toBeNull();
    expect(first.version).toBe(1);
    expect(first.detail).toMatchObject({
      version: 1,
      release_id: 'v1',
      built: true,
      error: false,
      platform: 'wind',
      repository_name: `${t.orgSlug}/shop/web`,
      commit_sha: firstSha,
      image: { id: image1.image_id, version: 1, commit_sha: firstSha, built: true },
      health_check_path: '/health',
      deployment_timeout: 180,
      process_counts: { web: 2 },
      processes: { web: { cmd: 'node server.js' } },
      configuration: [
        { name: 'API_KEY', value: '**secret**', secret: true, buildtime: false, scope: 'application' },
        { name: 'BUILD_GREETING', value: 'hi', secret: false, buildtime: true, scope: 'application' },
        { name: 'PLAIN', value: 'one', secret: false, buildtime: false, scope: 'application' },
      ],
      configuration_changes: { added: ['API_KEY', 'BUILD_GREETING', 'PLAIN'], removed: [], changed: [] },
      image_changes: { added: ['commit_sha', 'image_id', 'processes.web', 'processes.worker'], removed: [], changed: [] },
    });
    expect(first.log.build_step).toEqual({ steps: ['Resolve', 'Build', 'Export', 'Push', 'Done'], current: 4 });
    expect(JSON.stringify(first)).not.toContain(SECRET);
    // What runs the release: the frozen values, sealed.
    const row = await h.ctx.db
      .selectFrom('releases')
      .select('configuration_sealed')
      .where('id', '=', first.release_id)
      .executeTakeFirstOrThrow();
    expect(row.configuration_sealed).not.toContain(SECRET);
    expect(openConfiguration(h.ctx.secrets, row.configuration_sealed)).toEqual({ API_KEY: SECRET, BUILD_GREETING: 'hi', PLAIN: 'one' });

    // Change the secret's value, remove one variable, add one, and change the code.
    await h.app.inject({
      method: 'PATCH',
      url: `/v1/configurations/${t.appId}/${await configId(t, 'API_KEY')}`,
      headers: t.user.headers,
      payload: { value: SECRET_2 },
    });
    await h.app.inject({ method: 'DELETE', url: `/v1/configurations/${t.appId}/${await configId(t, 'PLAIN')}`, headers: t.user.headers });
    await setConfig(h, t, 'ADDED', 'new');
    const secondSha = r.commit({ 'server.js': nodeApp('v2')['server.js']! });
    const image2 = await buildAndWait(h, t);
    const second = await releaseAndWait(t);
    expect(second.detail).toMatchObject({
      version: 2,
      commit_sha: secondSha,
      image: { id: image2.image_id, version: 2 },
      configuration_changes: { added: ['ADDED'], removed: ['PLAIN'], changed: ['API_KEY'] },
      image_changes: { added: [], removed: [], changed: ['commit_sha', 'image_id'] },
    });
    expect(JSON.stringify(second)).not.toContain(SECRET_2);
    expect(second.log.log_text).toContain('Configuration changes: added [ADDED], removed [PLAIN], changed [API_KEY]');

    // Nothing changed: empty diffs. And release v1 stays frozen.
    const third = await releaseAndWait(t);
    expect(third.detail).toMatchObject({
      version: 3,
      configuration_changes: { added: [], removed: [], changed: [] },
      image_changes: { added: [], removed: [], changed: [] },
    });
    const again = (await h.app.inject({ method: 'GET', url: `/v1/releases/${first.release_id}/detail`, headers: t.user.headers })).json();
    expect(again.configuration).toEqual(first.detail.configuration);

    const list = await h.app.inject({ method: 'GET', url: `/v1/releases/${t.appId}`, headers: t.user.headers });
    expect(list.json().items.map((i: { version: number }) => i.version)).toEqual([3, 2, 1]);
    expect(list.json().items[0]).toMatchObject({ application_id: t.appId, platform: 'wind', built: true, error: false });
    expect(list.json().pagination).toEqual({ page: 1, per_page: 20, total: 3, pages: 1 });
    expect(h.logs()).not.toContain(SECRET);
  });

  it('uses the image of a build queued just before it', async () => {
    const r = new TestRepo();
    repos.push(r);
    r.commit({ Procfile: 'web: true\n' });
    const t = await createApp(h, { github_repository: r.dir, auto_deploy_branch: 'main' });
    await buildAndWait(h, t);
    const newer = r.commit({ README: 'changed' });
    const build = await h.app.inject({ method: 'POST', url: `/v1/images/${t.appId}/build`, headers: t.user.headers });
    const release = await releaseAndWait(t);
    expect(release.detail.image).toMatchObject({ id: build.json().image_id, version: 2, commit_sha: newer });
  });

  it('fails a release when the application has no built image', async () => {
    const t = await createApp(h);
    const release = await releaseAndWait(t);
    expect(release.log.status).toBe('error');
    expect(release.detail).toMatchObject({ built: false, error: true, image: null });
    expect(release.log.error_detail).toMatch(/^No built image: build the application first/);
  });

  it('numbers concurrent releases 1..n without gaps or duplicates', async () => {
    const r = new TestRepo();
    repos.push(r);
    r.commit({ Procfile: 'web: true\n' });
    const t = await createApp(h, { github_repository: r.dir });
    await buildAndWait(h, t);
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => h.app.inject({ method: 'POST', url: `/v1/releases/${t.appId}/create`, headers: t.user.headers })),
    );
    expect(answers.map((a) => a.statusCode)).toEqual(Array(8).fill(202));
    expect(answers.map((a) => a.json().version).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    // Each release committed with its job (one transaction under the application's lock), so the jobs queue in version order.
    const releases = await h.ctx.db
      .selectFrom('releases')
      .select(['id', 'job_id'])
      .where('application_id', '=', t.appId)
      .orderBy('version')
      .execute();
    const jobs = await h.ctx.db
      .selectFrom('pipeline_jobs')
      .select(['id', 'data', 'created_on'])
      .where('application_id', '=', t.appId)
      .where('kind', '=', 'release')
      .execute();
    const queued = releases.map((r) => jobs.find((j) => j.id === r.job_id)!);
    expect(queued.map((q) => (q.data as { recordId: string }).recordId)).toEqual(releases.map((r) => r.id));
    const times = queued.map((q) => q.created_on.getTime());
    expect(times).toEqual([...times].sort((a, b) => a - b));
    // The eight release jobs run one after another (one job per application at a time); on a
    // loaded 2-core CI machine that once took longer than waitFor's default 30 s.
    await waitFor(
      'every release built',
      async () => {
        const rows = await h.ctx.db.selectFrom('releases').select('status').where('application_id', '=', t.appId).execute();
        return rows.every((x) => x.status === 'built');
      },
      { timeout: 100_000 },
    );
  }, 150_000);

  it('answers 403 to strangers and 404 to unknown releases', async () => {
    const t = await createApp(h);
    const stranger = await h.user();
    expect((await h.app.inject({ method: 'POST', url: `/v1/releases/${t.appId}/create`, headers: stranger.headers })).statusCode).toBe(403);
    expect((await h.app.inject({ method: 'GET', url: `/v1/releases/${t.appId}`, headers: stranger.headers })).statusCode).toBe(403);
    expect(
      (await h.app.inject({ method: 'GET', url: '/v1/releases/00000000-0000-7000-8000-000000000000/detail', headers: t.user.headers }))
        .statusCode,
    ).toBe(404);
    expect((await h.app.inject({ method: 'GET', url: '/v1/releases/not-a-uuid/log', headers: t.user.headers })).statusCode).toBe(404);
  });
});
