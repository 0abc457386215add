import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../helpers/harness.js';
import { TestRepo } from '../helpers/git-repo.js';
import { waitFor } from '../helpers/wait.js';
import { buildAndWait, createApp, type TestApp } from './fixtures.js';

let h: Harness;
let repo: TestRepo;
beforeAll(async () => {
  h = await createHarness({}, { jobs: true });
  repo = new TestRepo();
});
afterAll(async () => {
  await h?.close();
  repo?.remove();
});

async function createRelease(t: TestApp) {
  const res = await h.app.inject({ method: 'POST', url: `/v1/releases/${t.appId}/create`, headers: t.user.headers });
  const id = res.json().release_id as string;
  await waitFor(
    `release ${id}`,
    async () =>
      (await h.ctx.db.selectFrom('releases').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status !== 'building',
  );
  return id;
}

/** Deployments are the deploy helper's records; here rows with known timings stand in for finished ones. */
async function insertDeployment(t: TestApp, releaseId: string, outcome: 'complete' | 'error', seconds: number, createdOffsetMs: number) {
  const env = await h.ctx.db.selectFrom('releases').select('environment_id').where('id', '=', releaseId).executeTakeFirstOrThrow();
  const started = new Date(Date.now() - 3_600_000 + createdOffsetMs);
  await h.ctx.db
    .insertInto('deployments')
    .values({
      id: uuidv7(),
      application_id: t.appId,
      environment_id: env.environment_id,
      release_id: releaseId,
      status: outcome,
      complete: outcome === 'complete',
      error: outcome === 'error',
      error_detail: outcome === 'error' ? 'health check timed out' : null,
      created_at: started,
      started_at: started,
      finished_at: new Date(started.getTime() + seconds * 1000),
      updated_at: started,
      deploy_step: JSON.stringify({ steps: ['Setup', 'Release', 'Deploy', 'Rollout', 'Done'], current: outcome === 'complete' ? 4 : 3 }),
    })
    .execute();
}

describe('pipeline-status, pipeline-metrics and latest_* fields', () => {
  it('are null / empty before anything ran', async () => {
    const t = await createApp(h);
    const status = await h.app.inject({ method: 'GET', url: `/v1/applications/${t.appId}/pipeline-status`, headers: t.user.headers });
    expect(status.statusCode).toBe(200);
    expect(status.json()).toEqual({ build: null, release: null, deploy: null, instances: null });
    const metrics = (
      await h.app.inject({ method: 'GET', url: `/v1/applications/${t.appId}/pipeline-metrics`, headers: t.user.headers })
    ).json();
    const empty = { total: 0, success: 0, error: 0, success_rate: null, duration: { avg: null, p50: null, p95: null } };
    expect(metrics).toEqual({ range: 50, build: empty, release: empty, deploy: empty });
  });

  it('are computed from the real records', async () => {
    repo.commit({ Procfile: 'web: true\n' });
    const t = await createApp(h, { github_repository: repo.dir, auto_deploy_branch: 'main' });
    await buildAndWait(h, t); // build v1: built
    const failed = await buildAndWait(h, t, { ref: 'nope' }); // build v2: error
    const releaseId = await createRelease(t);
    await insertDeployment(t, releaseId, 'complete', 10, 0);
    await insertDeployment(t, releaseId, 'complete', 20, 1000);
    await insertDeployment(t, releaseId, 'error', 60, 2000);

    const status = (
      await h.app.inject({ method: 'GET', url: `/v1/applications/${t.appId}/pipeline-status`, headers: t.user.headers })
    ).json();
    expect(status.build).toMatchObject({
      id: failed.image_id,
      version: 2,
      status: 'error',
      error_detail: "ref 'nope' was not found in file://" + repo.dir,
      step: { current: 0 },
    });
    expect(status.release).toMatchObject({ id: releaseId, version: 1, status: 'built', error_detail: null, step: { current: 4 } });
    expect(status.deploy).toMatchObject({ version: 1, status: 'error', error_detail: 'health check timed out', step: { current: 3 } });

    const metrics = (
      await h.app.inject({ method: 'GET', url: `/v1/applications/${t.appId}/pipeline-metrics`, headers: t.user.headers })
    ).json();
    expect(metrics.build).toMatchObject({ total: 2, success: 1, error: 1, success_rate: 0.5 });
    const images = await h.ctx.db
      .selectFrom('images')
      .select(['started_at', 'finished_at'])
      .where('application_id', '=', t.appId)
      .execute();
    const buildSeconds = images.map((i) => (i.finished_at!.getTime() - i.started_at!.getTime()) / 1000).sort((a, b) => a - b);
    expect(metrics.build.duration.p50).toBeCloseTo(buildSeconds[0]!, 2);
    expect(metrics.build.duration.p95).toBeCloseTo(buildSeconds[1]!, 2);
    expect(metrics.release).toMatchObject({ total: 1, success: 1, error: 0, success_rate: 1 });
    expect(metrics.deploy).toEqual({ total: 3, success: 2, error: 1, success_rate: 0.667, duration: { avg: 30, p50: 20, p95: 60 } });

    const lastOne = (
      await h.app.inject({ method: 'GET', url: `/v1/applications/${t.appId}/pipeline-metrics?range=1`, headers: t.user.headers })
    ).json();
    expect(lastOne.range).toBe(1);
    expect(lastOne.deploy).toMatchObject({ total: 1, success: 0, error: 1 });
    expect(lastOne.build).toMatchObject({ total: 1, success: 0, error: 1 });
    expect(
      (await h.app.inject({ method: 'GET', url: `/v1/applications/${t.appId}/pipeline-metrics?range=500`, headers: t.user.headers }))
        .statusCode,
    ).toBe(422);

    // The application list and detail show the latest records.
    const detail = (await h.app.inject({ method: 'GET', url: `/v1/applications/${t.orgSlug}/shop/web`, headers: t.user.headers })).json();
    expect(detail.latest_image).toMatchObject({ id: failed.image_id, version: 2, built: false, error: true });
    expect(detail.latest_release).toMatchObject({ id: releaseId, version: 1, built: true, error: false });
    expect(detail.latest_deployment).toMatchObject({ release_version: 1, complete: false, error: true });
    const list = (await h.app.inject({ method: 'GET', url: `/v1/applications/${t.orgSlug}/shop`, headers: t.user.headers })).json();
    expect(list[0]).toMatchObject({ latest_image_version: 2, latest_release_version: 1, latest_deployment_complete: false });
  });

  it('are private to the organization', async () => {
    const t = await createApp(h);
    const stranger = await h.user();
    for (const view of ['pipeline-status', 'pipeline-metrics']) {
      expect(
        (await h.app.inject({ method: 'GET', url: `/v1/applications/${t.appId}/${view}`, headers: stranger.headers })).statusCode,
      ).toBe(403);
    }
  });
});
