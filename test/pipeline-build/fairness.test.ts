import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { TestRepo } from '../helpers/git-repo.js';
import { waitFor } from '../helpers/wait.js';
import { createApp, type TestApp } from './fixtures.js';

/**
 * One organization's flood of builds must not starve another's (issue 20): each organization
 * runs at most PIPELINE_ORG_CONCURRENCY jobs, the least busy organization goes first, and an
 * organization's queue is capped (429, nothing stored).
 */
let h: Harness;
const repos: TestRepo[] = [];
beforeAll(async () => {
  h = await createHarness({ PIPELINE_CONCURRENCY: 2, PIPELINE_ORG_CONCURRENCY: 1, PIPELINE_ORG_QUEUE_LIMIT: 4 }, { jobs: true });
});
afterAll(async () => {
  await h?.close();
  for (const r of repos) r.remove();
});

function repoBuilding(command: string) {
  const r = new TestRepo();
  repos.push(r);
  r.commit({ 'slipway.json': JSON.stringify({ build: command }), Procfile: 'web: sleep 1000\n' });
  return r.dir;
}

const build = (user: TestUser, appId: string) => h.app.inject({ method: 'POST', url: `/v1/images/${appId}/build`, headers: user.headers });

/** Another application in the same organization and project as `t`. */
async function sibling(t: TestApp, name: string, repository: string) {
  const res = await h.app.inject({
    method: 'POST',
    url: '/v1/applications',
    headers: t.user.headers,
    payload: { name, project_id: t.projectId },
  });
  expect(res.statusCode, res.body).toBe(201);
  const id = res.json().id as string;
  const patched = await h.app.inject({
    method: 'PATCH',
    url: `/v1/applications/${id}/settings`,
    headers: t.user.headers,
    payload: { github_repository: repository },
  });
  expect(patched.statusCode, patched.body).toBe(200);
  return id;
}

const imagesOf = (appIds: string[]) =>
  h.ctx.db
    .selectFrom('images')
    .select(['id', 'status', 'started_at', 'finished_at', 'error_detail'])
    .where('application_id', 'in', appIds)
    .orderBy('created_at')
    .execute();

describe('fair pipeline across organizations', () => {
  let flood: TestApp;
  let floodApps: string[];

  it("runs another organization's build while one organization's flood waits its turn", async () => {
    const slow = repoBuilding('sleep 4');
    flood = await createApp(h, { github_repository: slow });
    floodApps = [flood.appId, await sibling(flood, 'Api', slow), await sibling(flood, 'Admin', slow)];
    // Four builds over three applications: without per-organization fairness they would take
    // both workers and every free slot before the other organization's build.
    for (const appId of [...floodApps, floodApps[0]!]) expect((await build(flood.user, appId)).statusCode).toBe(202);

    const other = await createApp(h, { github_repository: repoBuilding('true') });
    const started = await build(other.user, other.appId);
    expect(started.statusCode).toBe(202);
    const otherImage = started.json().image_id as string;
    const finished = await waitFor(
      "the other organization's build",
      async () => {
        const [image] = await imagesOf([other.appId]);
        return image!.status !== 'building' ? image : null;
      },
      { timeout: 120_000 },
    );
    expect(finished.id).toBe(otherImage);
    expect(finished.status).toBe('built');

    // When it was done, the flood had started at most two of its four builds (one at a time).
    const floodImages = await imagesOf(floodApps);
    expect(floodImages).toHaveLength(4);
    const startedBefore = floodImages.filter((i) => i.started_at && i.started_at <= finished.finished_at!);
    expect(startedBefore.length).toBeLessThanOrEqual(2);
    expect(floodImages.filter((i) => i.status === 'building').length).toBeGreaterThanOrEqual(2);

    // The flood drains, one build of the organization at a time.
    const drained = await waitFor(
      'the flood to drain',
      async () => {
        const rows = await imagesOf(floodApps);
        return rows.every((i) => i.status !== 'building') ? rows : null;
      },
      { timeout: 180_000, every: 250 },
    );
    expect(drained.map((i) => i.status)).toEqual(['built', 'built', 'built', 'built']);
    const spans = drained.map((i) => [i.started_at!.getTime(), i.finished_at!.getTime()] as const).sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < spans.length; i++) expect(spans[i]![0]).toBeGreaterThanOrEqual(spans[i - 1]![1]);
  });

  it("answers 429 and stores nothing when the organization's queue is full", async () => {
    const slow = repoBuilding('sleep 3');
    const t = await createApp(h, { github_repository: slow });
    const apps = [t.appId, await sibling(t, 'Api', slow)];
    for (let i = 0; i < 4; i++) expect((await build(t.user, apps[i % 2]!)).statusCode).toBe(202);
    const before = await imagesOf(apps);

    const refused = await build(t.user, apps[1]!);
    expect(refused.statusCode).toBe(429);
    expect(refused.json()).toEqual({ status: 429, message: expect.stringContaining('4 pipeline jobs waiting or running') });
    // The deploy chain (POST /applications/{id}/deploy) counts against the same cap.
    const deploy = await h.app.inject({ method: 'POST', url: `/v1/applications/${apps[0]}/deploy`, headers: t.user.headers });
    expect(deploy.statusCode).toBe(429);
    expect(await imagesOf(apps)).toEqual(before);
    // So does a release (its caps are read with its other checks in one statement), storing no release.
    const release = await h.app.inject({ method: 'POST', url: `/v1/releases/${apps[0]}/create`, headers: t.user.headers });
    expect(release.statusCode).toBe(429);
    expect(release.json().message).toContain('4 pipeline jobs waiting or running');
    expect(await h.ctx.db.selectFrom('releases').select('id').where('application_id', 'in', apps).execute()).toEqual([]);

    // Room again once some have finished.
    await waitFor('a build of the full queue to finish', async () => (await imagesOf(apps)).some((i) => i.status !== 'building'), {
      timeout: 120_000,
      every: 250,
    });
    // The job of a finished build leaves the queue a moment after its image record settles.
    const accepted = await waitFor(
      'room in the queue',
      async () => {
        const r = await build(t.user, apps[1]!);
        return r.statusCode === 202 ? r : null;
      },
      { timeout: 30_000, every: 250 },
    );
    expect(accepted.statusCode).toBe(202);
  });

  it("fails a build that outlasts its organization's timeout, which only a site administrator sets", async () => {
    const t = await createApp(h, { github_repository: repoBuilding('sleep 60') });
    const limits = `/v1/organizations/${t.orgSlug}/pipeline-limits`;
    // The organization's own admin is not an operator.
    const denied = await h.app.inject({ method: 'PUT', url: limits, headers: t.user.headers, payload: { build_timeout_seconds: 10 } });
    expect(denied.statusCode).toBe(403);
    const operator = await h.user({ admin: true });
    const bad = await h.app.inject({ method: 'PUT', url: limits, headers: operator.headers, payload: { build_timeout_seconds: 1 } });
    expect(bad.statusCode).toBe(422);
    const set = await h.app.inject({ method: 'PUT', url: limits, headers: operator.headers, payload: { build_timeout_seconds: 10 } });
    expect(set.statusCode, set.body).toBe(200);
    // The disk quota (issue 27) is left as it was: a field left out keeps its value.
    expect(set.json()).toEqual({
      build_timeout_seconds: 10,
      effective_build_timeout_seconds: 10,
      disk_quota_mb: null,
      effective_disk_quota_mb: 20_480,
      outbound: null,
      effective_outbound: true,
    });

    expect((await build(t.user, t.appId)).statusCode).toBe(202);
    const [image] = await waitFor(
      'the build to time out',
      async () => {
        const rows = await imagesOf([t.appId]);
        return rows[0]!.status !== 'building' ? rows : null;
      },
      { timeout: 120_000, every: 250 },
    );
    expect(image!.status).toBe('error');
    expect(image!.error_detail).toContain('build timed out after 10 s');

    const reset = await h.app.inject({ method: 'PUT', url: limits, headers: operator.headers, payload: { build_timeout_seconds: null } });
    expect(reset.json()).toEqual({
      build_timeout_seconds: null,
      effective_build_timeout_seconds: 1800,
      disk_quota_mb: null,
      effective_disk_quota_mb: 20_480,
      outbound: null,
      effective_outbound: true,
    });
  });
});
