// GET /v1/overview: the home page's one read across organizations. Pipeline records are seeded
// as the route walks seed them (no pipeline runs here); who started a deployment through the API
// is proven with a real deploy in test/dashboard/organization-pages.test.ts.
import { sql } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { call, expectError, seedWorld, type World } from '../control-plane/fixtures.js';
import { insertRow } from '../control-plane/route-fixtures.js';

let h: Harness;
let world: World;
let outsider: TestUser;
let failingAppId: string;
let productionId: string;

async function release(appId: string, version: number) {
  const base = { application_id: appId, environment_id: productionId };
  const imageId = await insertRow(h, 'images', { id: uuidv7(), application_id: appId, version, repository_name: `shop/${appId}` });
  return insertRow(h, 'releases', { id: uuidv7(), ...base, version, image_ref: imageId });
}

async function deployment(appId: string, releaseId: string, status: string) {
  const done = status !== 'queued';
  return insertRow(h, 'deployments', {
    id: uuidv7(),
    application_id: appId,
    environment_id: productionId,
    release_id: releaseId,
    status,
    complete: done,
    error: status === 'error',
    finished_at: done ? new Date() : null,
  });
}

beforeAll(async () => {
  h = await createHarness();
  world = await seedWorld(h);
  outsider = await h.user();
  await call(h, 'POST', '/v1/organizations', outsider, { name: 'Elsewhere' });
  productionId = (
    await h.ctx.db
      .selectFrom('environments')
      .select('id')
      .where('project_id', '=', world.project.id)
      .where('env_type', '=', 'production')
      .executeTakeFirstOrThrow()
  ).id;
  // The seeded application: v1 served, v2 queued.
  await deployment(world.app.id, await release(world.app.id, 1), 'complete');
  const v2 = await release(world.app.id, 2);
  await deployment(world.app.id, v2, 'queued');
  // 200 requests in the last minute, one of them a 5xx: traffic, not a failure.
  await sql`INSERT INTO request_stats (application_id, environment_id, process_type, minute, requests, status_classes, latency_buckets, latency_sum_ms)
            VALUES (${world.app.id}, ${productionId}, 'web', date_trunc('minute', now()), 200, ARRAY[0,199,0,0,1], ARRAY[200,0,0,0,0,0,0,0,0,0,0,0,0,0], 100)`.execute(
    h.ctx.db,
  );
  // A second application whose newest production deployment failed.
  const failing = await call(h, 'POST', '/v1/applications', world.owner, { name: 'Worker', project_id: world.project.id });
  failingAppId = failing.body.id;
  await deployment(failingAppId, await release(failingAppId, 1), 'error');
  // A third that never deployed.
  await call(h, 'POST', '/v1/applications', world.owner, { name: 'Idle', project_id: world.project.id });
}, 60_000);

afterAll(async () => {
  await h?.close();
});

describe('GET /v1/overview', () => {
  it('lists every application with production state, failing first, and its newest deployment', async () => {
    const res = await call(h, 'GET', '/v1/overview', world.owner);
    expect(res.status, res.raw).toBe(200);
    const apps = res.body.applications as Array<any>;
    expect(apps.map((a) => [a.slug, a.state])).toEqual([
      ['worker', 'failing'],
      [world.app.slug, 'deploying'],
      ['idle', 'idle'],
    ]);
    expect(apps[0].problems).toEqual(['deployment of v1 failed']);
    const web = apps[1];
    expect(web).toMatchObject({
      organization_slug: world.org.slug,
      project_slug: world.project.slug,
      serving_release_version: 1,
      problems: [],
      last_deployment: { release_version: 2, status: 'queued', is_rollback: false, started_by: null },
    });
    expect(web.traffic.requests.at(-1)).toBe(200);
    expect(web.traffic.errors.at(-1)).toBe(1);
    expect(web.traffic.requests.length).toBe(web.traffic.errors.length);
    expect(apps[2]).toMatchObject({
      serving_release_version: null,
      last_deployment: null,
      instances: { total: 0, healthy: 0, crashed: 0 },
    });
    expect(res.body.truncated).toBe(false);
  });

  it('answers in pages on request: chosen by slug, failing first within each, Link rel="next" while more follow', async () => {
    const whole = (await call(h, 'GET', '/v1/overview', world.owner)).body.applications as Array<any>;
    const bySlug = whole.map((a) => a.slug).sort();
    const first = await call(h, 'GET', `/v1/overview?per_page=2&organization=${world.org.slug}`, world.owner);
    expect(first.status, first.raw).toBe(200);
    expect(first.body.truncated).toBe(true);
    expect(first.headers.link).toBe(`</v1/overview?page=2&per_page=2&organization=${world.org.slug}>; rel="next"`);
    const firstApps = first.body.applications as Array<any>;
    expect(firstApps.map((a) => a.slug).sort()).toEqual(bySlug.slice(0, 2));
    const order = { failing: 0, deploying: 1, healthy: 2, idle: 3 } as Record<string, number>;
    expect(firstApps.map((a) => order[a.state])).toEqual(firstApps.map((a) => order[a.state]).sort());
    // Each application reads as in the whole answer.
    for (const a of firstApps) expect(a).toEqual(whole.find((w) => w.id === a.id));

    const second = await call(h, 'GET', first.headers.link!.toString().slice(1, -'>; rel="next"'.length), world.owner);
    expect(second.status, second.raw).toBe(200);
    expect(second.body.truncated).toBe(false);
    expect(second.headers.link).toBeUndefined();
    expect((second.body.applications as Array<any>).map((a) => a.slug)).toEqual(bySlug.slice(2));
    // Past the end: an empty page.
    expect((await call(h, 'GET', '/v1/overview?page=9&per_page=2', world.owner)).body).toEqual({ applications: [], truncated: false });
    // Without page or per_page the answer is as before: no Link while everything fits.
    expect((await call(h, 'GET', '/v1/overview', world.owner)).headers.link).toBeUndefined();
    expectError(await call(h, 'GET', '/v1/overview?per_page=101', world.owner), 422);
    expectError(await call(h, 'GET', '/v1/overview?page=0', world.owner), 422);
  });

  it('a 5xx share of 5% or more in the last minutes counts as failing', async () => {
    await sql`UPDATE request_stats SET status_classes = ARRAY[0,180,0,0,20] WHERE application_id = ${world.app.id}`.execute(h.ctx.db);
    const res = await call(h, 'GET', `/v1/overview?organization=${world.org.slug}`, world.owner);
    const web = (res.body.applications as Array<any>).find((a) => a.id === world.app.id);
    expect(web.state).toBe('failing');
    expect(web.problems).toEqual(['10% of requests failed (5xx) in the last 10 minutes']);
  });

  it('shows each application once when its project has a second production environment', async () => {
    const eu = await insertRow(h, 'environments', {
      id: uuidv7(),
      project_id: world.project.id,
      name: 'EU production',
      slug: 'eu-production',
      env_type: 'production',
    });
    const r = await insertRow(h, 'releases', {
      id: uuidv7(),
      application_id: world.app.id,
      environment_id: eu,
      version: 9,
      image_ref: null,
    });
    await insertRow(h, 'deployments', {
      id: uuidv7(),
      application_id: world.app.id,
      environment_id: eu,
      release_id: r,
      status: 'complete',
      complete: true,
      finished_at: new Date(),
    });
    const apps = (await call(h, 'GET', '/v1/overview', world.owner)).body.applications as Array<any>;
    expect(apps.map((a) => a.slug).sort()).toEqual(['idle', world.app.slug, 'worker'].sort());
    // The one named `production` is the application's production, as deployments choose it.
    expect(apps.find((a) => a.id === world.app.id).serving_release_version).toBe(1);
  });

  it("shows nobody another organization's applications", async () => {
    const mine = await call(h, 'GET', '/v1/overview', outsider);
    expect(mine.status).toBe(200);
    expect(mine.body.applications).toEqual([]);
    expectError(await call(h, 'GET', `/v1/overview?organization=${world.org.slug}`, outsider), 403);
    expectError(await call(h, 'GET', '/v1/overview?organization=no-such-org', outsider), 404);
    expectError(await call(h, 'GET', '/v1/overview'), 401);
  });
});
