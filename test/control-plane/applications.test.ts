import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../helpers/harness.js';
import { POD_CLASS_NAMES } from '../../src/modules/applications/pod-classes.js';
import { call, expectError, seedWorld } from './fixtures.js';
import { insertRow } from './route-fixtures.js';

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => {
  await h?.close();
});

describe('applications', () => {
  it('create gives the documented defaults; detail and list by slugs', async () => {
    const w = await seedWorld(h);
    const created = await call(h, 'POST', '/v1/applications', w.owner, {
      name: 'Worker Queue',
      project_id: w.project.id,
      platform: 'steam',
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.any(String),
      name: 'Worker Queue',
      slug: 'worker-queue',
      project_id: w.project.id,
      project_slug: w.project.slug,
      organization_slug: w.org.slug,
      platform: 'steam',
      process_counts: {},
      process_pod_classes: {},
      github_repository: null,
      github_repository_is_private: false,
      auto_deploy_branch: null,
      subdirectory: null,
      github_app_installation_id: null,
      github_environment_name: null,
      deployment_timeout: 180,
      health_check_path: '/',
      health_check_host: null,
      health_check_timeout: null,
      stability_window: null,
      privileged: false,
      start_command: null,
      created: expect.any(String),
      updated: expect.any(String),
      latest_image: null,
      latest_release: null,
      latest_deployment: null,
    });
    const detail = await call(h, 'GET', `/v1/applications/${w.org.slug}/${w.project.slug}/worker-queue`, w.owner);
    expect(detail.body).toEqual(created.body);
    const list = await call(h, 'GET', `/v1/applications/${w.org.slug}/${w.project.slug}`, w.owner);
    expect(list.body.map((a: any) => a.slug)).toEqual(['api', 'worker-queue']);
    expect(list.body[1]).toEqual({
      id: created.body.id,
      name: 'Worker Queue',
      slug: 'worker-queue',
      project_id: w.project.id,
      platform: 'steam',
      created: created.body.created,
      latest_image_version: null,
      latest_release_version: null,
      latest_deployment_complete: null,
    });
    expect((await call(h, 'GET', `/v1/projects/${w.org.slug}/${w.project.slug}`, w.owner)).body.application_count).toBe(2);
  });

  it('platform defaults to wind and must be one of the catalogue', async () => {
    const w = await seedWorld(h);
    expect((await call(h, 'POST', '/v1/applications', w.owner, { name: 'p1', project_id: w.project.id })).body.platform).toBe('wind');
    for (const platform of ['wind', 'steam', 'diesel', 'stirling', 'nuclear', 'electric']) {
      const res = await call(h, 'POST', '/v1/applications', w.owner, { name: `app-${platform}`, project_id: w.project.id, platform });
      expect(res.status).toBe(201);
    }
    expectError(await call(h, 'POST', '/v1/applications', w.owner, { name: 'bad', project_id: w.project.id, platform: 'coal' }), 422);
  });

  it('duplicate slugs in a project are 409; unknown projects 404; outsiders 403', async () => {
    const w = await seedWorld(h);
    const outsider = await h.user();
    expectError(await call(h, 'POST', '/v1/applications', w.owner, { name: 'API', project_id: w.project.id }), 409);
    expectError(await call(h, 'POST', '/v1/applications', w.owner, { name: 'x', project_id: '0190b6a4-7c3e-7000-8000-000000000000' }), 404);
    expectError(await call(h, 'POST', '/v1/applications', outsider, { name: 'x', project_id: w.project.id }), 403);
    expectError(await call(h, 'GET', `/v1/applications/${w.org.slug}/${w.project.slug}/nope`, w.owner), 404);
    expectError(await call(h, 'GET', `/v1/applications/${w.org.slug}/${w.project.slug}/${w.app.slug}`, outsider), 403);
    expectError(await call(h, 'GET', `/v1/applications/no-such-org/${w.project.slug}/${w.app.slug}`, w.owner), 404);
    expectError(await call(h, 'GET', `/v1/applications/${w.org.slug}/no-such-project/${w.app.slug}`, w.owner), 404);
    // Outsiders learn nothing about what exists inside the organization: 403 either way.
    expectError(await call(h, 'GET', `/v1/applications/${w.org.slug}/no-such-project/${w.app.slug}`, outsider), 403);
    expectError(await call(h, 'GET', `/v1/applications/${w.org.slug}/${w.project.slug}/nope`, outsider), 403);
  });

  it('PATCH settings changes only the given fields and validates them', async () => {
    const w = await seedWorld(h);
    const url = `/v1/applications/${w.app.id}/settings`;
    // The installation must be the organization's (issue 27): unlinked, it is refused and nothing changes.
    const unlinked = await call(h, 'PATCH', url, w.owner, { github_app_installation_id: 1234, deployment_timeout: 300 });
    expectError(unlinked, 403);
    expect(unlinked.body.message).toContain('The GitHub App installation 1234 is not linked to this organization');
    const siteAdmin = await h.user({ admin: true });
    expect((await call(h, 'PUT', '/v1/github/installations/1234', siteAdmin, { organization: w.org.slug })).status).toBe(200);
    const res = await call(h, 'PATCH', url, w.owner, {
      github_repository: 'acme/api',
      github_repository_is_private: true,
      auto_deploy_branch: 'main',
      subdirectory: 'services/api',
      github_app_installation_id: 1234,
      github_environment_name: 'production',
      deployment_timeout: 300,
      health_check_path: '/healthz',
      health_check_host: 'api.example.com',
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      github_repository: 'acme/api',
      github_repository_is_private: true,
      auto_deploy_branch: 'main',
      subdirectory: 'services/api',
      github_app_installation_id: 1234,
      github_environment_name: 'production',
      deployment_timeout: 300,
      health_check_path: '/healthz',
      health_check_host: 'api.example.com',
    });
    const partial = await call(h, 'PATCH', url, w.owner, { health_check_host: null });
    expect(partial.body).toMatchObject({ health_check_host: null, health_check_path: '/healthz', deployment_timeout: 300 });
    // Issue 30: the health-check timeout and the stability window, each back to the platform's default with null.
    const timing = await call(h, 'PATCH', url, w.owner, { health_check_timeout: 30, stability_window: 0 });
    expect(timing.body).toMatchObject({ health_check_timeout: 30, stability_window: 0 });
    const defaults = await call(h, 'PATCH', url, w.owner, { health_check_timeout: null, stability_window: null });
    expect(defaults.body).toMatchObject({ health_check_timeout: null, stability_window: null });
    const bad = [
      { deployment_timeout: 0 },
      { deployment_timeout: '60' },
      { health_check_path: 'no-slash' },
      { subdirectory: '../etc' },
      { subdirectory: '/abs' },
      { auto_deploy_branch: 'bad branch' },
      { privileged: true },
      { name: '' },
      { github_app_installation_id: -1 },
      { health_check_timeout: 0 },
      { health_check_timeout: 3601 },
      { stability_window: -1 },
      { stability_window: 601 },
      { stability_window: 2.5 },
    ];
    for (const body of bad) expectError(await call(h, 'PATCH', url, w.owner, body), 422);
    expect((await call(h, 'GET', `/v1/applications/${w.org.slug}/${w.project.slug}/${w.app.slug}`, w.owner)).body).toMatchObject({
      deployment_timeout: 300,
      health_check_path: '/healthz',
      subdirectory: 'services/api',
      privileged: false,
    });
  });

  it("the detail PostgreSQL writes (issue 35's hot path) equals the one node shapes, field for field", async () => {
    const w = await seedWorld(h);
    const siteAdmin = await h.user({ admin: true });
    expect((await call(h, 'PUT', '/v1/github/installations/98765', siteAdmin, { organization: w.org.slug })).status).toBe(200);
    const settings = await call(h, 'PATCH', `/v1/applications/${w.app.id}/settings`, w.owner, {
      github_repository: 'acme/api',
      github_app_installation_id: 98765,
      health_check_host: 'api.example.com',
      health_check_timeout: 30,
      stability_window: 0,
      start_command: 'node "server.js" --name=\\u00e9\t',
    });
    expect(settings.status, settings.raw).toBe(200);
    await call(h, 'POST', `/v1/applications/${w.app.id}/scale`, w.owner, {
      process_counts: { web: 2, worker: 1 },
      process_pod_classes: { web: 'c1.medium' },
    });
    const production = (
      await h.ctx.db
        .selectFrom('environments')
        .select('id')
        .where('project_id', '=', w.project.id)
        .where('slug', '=', 'production')
        .executeTakeFirstOrThrow()
    ).id;
    // Records with microseconds (node keeps milliseconds): both paths must cut them the same way.
    const at = "'2026-01-02 03:04:05.678999+00'";
    const image = await insertRow(h, 'images', { application_id: w.app.id, version: 3, repository_name: 'acme/api', built: true });
    const release = await insertRow(h, 'releases', { application_id: w.app.id, environment_id: production, version: 7, image_ref: image });
    await insertRow(h, 'deployments', {
      application_id: w.app.id,
      environment_id: production,
      release_id: release,
      status: 'complete',
      complete: true,
    });
    await sql.raw(`update images set created_at = ${at} where id = '${image}'`).execute(h.ctx.db);
    await sql.raw(`update applications set updated_at = ${at} where id = '${w.app.id}'`).execute(h.ctx.db);

    const path = `/v1/applications/${w.org.slug}/${w.project.slug}/${w.app.slug}`;
    const fast = await call(h, 'GET', path, w.owner);
    expect(fast.status, fast.raw).toBe(200);
    expect(fast.headers['content-type']).toBe('application/json; charset=utf-8');
    // With ?environment= the detail takes node's path (every record here is production's, so the answers agree).
    const shaped = await call(h, 'GET', `${path}?environment=production`, w.owner);
    expect(shaped.status, shaped.raw).toBe(200);
    expect(fast.body).toEqual(shaped.body);
    expect(fast.body).toMatchObject({
      github_app_installation_id: 98765,
      start_command: 'node "server.js" --name=\\u00e9\t',
      updated: '2026-01-02T03:04:05.678Z',
      process_counts: { web: 2, worker: 1 },
      latest_image: { id: image, version: 3, created: '2026-01-02T03:04:05.678Z' },
      latest_release: { id: release, version: 7, environment: 'production' },
      latest_deployment: { release_version: 7, complete: true, environment: 'production' },
    });
    // Strangers and missing levels still get the slower path's answers.
    const outsider = await h.user();
    expectError(await call(h, 'GET', path, outsider), 403);
    expectError(await call(h, 'GET', `/v1/applications/${w.org.slug}/${w.project.slug}/nope`, w.owner), 404);
  });

  it('scale merges counts and pod classes, validated against the catalogue', async () => {
    const w = await seedWorld(h);
    const url = `/v1/applications/${w.app.id}/scale`;
    const first = await call(h, 'POST', url, w.owner, { process_counts: { web: 2, worker: 1 }, process_pod_classes: { web: 'c1.medium' } });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ process_counts: { web: 2, worker: 1 }, process_pod_classes: { web: 'c1.medium' } });
    const second = await call(h, 'POST', url, w.owner, { process_counts: { worker: 0 }, process_pod_classes: { worker: 'r1.2xlarge' } });
    expect(second.body).toMatchObject({
      process_counts: { web: 2, worker: 0 },
      process_pod_classes: { web: 'c1.medium', worker: 'r1.2xlarge' },
    });
    for (const name of POD_CLASS_NAMES) {
      expect((await call(h, 'POST', url, w.owner, { process_pod_classes: { web: name } })).status).toBe(200);
    }
    const bad = [
      { process_pod_classes: { web: 'x1.huge' } },
      { process_counts: { web: -1 } },
      { process_counts: { web: 1.5 } },
      { process_counts: { web: '2' } },
      { process_counts: { 'Bad Name': 1 } },
      { process_counts: { web: 101 } },
      { replicas: 3 },
    ];
    for (const body of bad) expectError(await call(h, 'POST', url, w.owner, body), 422);
    const row = await h.ctx.db
      .selectFrom('applications')
      .select(['process_counts', 'process_pod_classes'])
      .where('id', '=', w.app.id)
      .executeTakeFirstOrThrow();
    expect(row.process_counts).toEqual({ web: 2, worker: 0 });
    expect(row.process_pod_classes).toEqual({ web: POD_CLASS_NAMES.at(-1), worker: 'r1.2xlarge' });
  });

  it('concurrent scales of different process types lose nothing', async () => {
    const w = await seedWorld(h);
    const url = `/v1/applications/${w.app.id}/scale`;
    const types = Array.from({ length: 8 }, (_, i) => `p${i}`);
    await Promise.all(types.map((t, i) => call(h, 'POST', url, w.owner, { process_counts: { [t]: i + 1 } })));
    const detail = await call(h, 'GET', `/v1/applications/${w.org.slug}/${w.project.slug}/${w.app.slug}`, w.owner);
    expect(detail.body.process_counts).toEqual(Object.fromEntries(types.map((t, i) => [t, i + 1])));
  });
});
