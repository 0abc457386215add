import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';

let h: Harness;
let alice: TestUser; // admin of acme
let carol: TestUser; // plain member of acme
let bob: TestUser; // admin of globex only
const ENVS = '/workspaces/acme/projects/shop/envs';

const call = (user: TestUser, method: string, url: string, payload?: unknown) =>
  h.app.inject({
    method: method as 'GET',
    url: `/v1${url}`,
    headers: user.headers,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });

beforeAll(async () => {
  h = await createHarness();
  [alice, carol, bob] = [await h.user(), await h.user(), await h.user()];
  const ws = (await call(alice, 'POST', '/workspaces', { name: 'Acme' })).json();
  await call(bob, 'POST', '/workspaces', { name: 'Globex' });
  await call(alice, 'POST', '/workspaces/acme/members', { username: carol.username });
  const project = (await call(alice, 'POST', '/projects', { name: 'Shop', organization_id: ws.id })).json();
  const web = (await call(alice, 'POST', '/applications', { name: 'web', project_id: project.id })).json();
  await call(alice, 'POST', '/applications', { name: 'worker', project_id: project.id });
  await call(alice, 'POST', `/applications/${web.id}/scale`, { process_counts: { web: 2 }, process_pod_classes: { web: 'm1.small' } });
});
afterAll(async () => {
  await h?.close();
});

describe('environments', () => {
  it('lists the production environment every project starts with', async () => {
    const list = await call(carol, 'GET', ENVS);
    expect(list.statusCode).toBe(200);
    expect(list.json()).toEqual([
      {
        id: expect.any(String),
        name: 'production',
        slug: 'production',
        env_type: 'production',
        auto_deploy_branch: null,
        protected: false,
        process_counts: { web: { web: 2 }, worker: {} },
        process_pod_classes: { web: { web: 'm1.small' }, worker: {} },
        service_count: 2,
        created: expect.any(String),
        updated: expect.any(String),
      },
    ]);
  });

  it('creates, gets and patches an environment', async () => {
    const created = await call(carol, 'POST', ENVS, { name: 'Staging', auto_deploy_branch: 'develop' });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject({
      name: 'Staging',
      slug: 'staging',
      env_type: 'staging',
      auto_deploy_branch: 'develop',
      protected: false,
    });
    const preview = await call(carol, 'POST', ENVS, { name: 'PR 42', env_type: 'preview' });
    expect(preview.json()).toMatchObject({ slug: 'pr-42', env_type: 'preview' });
    expect((await call(carol, 'POST', ENVS, { name: 'Other', slug: 'staging' })).statusCode).toBe(409);
    expect((await call(carol, 'POST', ENVS, { name: 'x', env_type: 'qa' })).statusCode).toBe(422);

    const patched = await call(carol, 'PATCH', `${ENVS}/staging`, {
      name: 'Staging EU',
      auto_deploy_branch: 'main',
      process_counts: { web: { web: 1, clock: 1 } },
      process_pod_classes: { worker: { worker: 'c1.medium' } },
    });
    expect(patched.statusCode).toBe(200);
    expect(patched.json()).toMatchObject({
      name: 'Staging EU',
      slug: 'staging',
      auto_deploy_branch: 'main',
      process_counts: { web: { web: 1, clock: 1 }, worker: {} },
      process_pod_classes: { web: { web: 'm1.small' }, worker: { worker: 'c1.medium' } },
    });
    // null drops the environment's override: the service's own count shows again.
    const reset = await call(carol, 'PATCH', `${ENVS}/staging`, { process_counts: { web: { web: null } } });
    expect(reset.json().process_counts.web).toEqual({ web: 2, clock: 1 });
    // Production is untouched by staging's settings.
    expect((await call(carol, 'GET', `${ENVS}/production`)).json().process_counts.web).toEqual({ web: 2 });

    expect((await call(carol, 'PATCH', `${ENVS}/staging`, { process_counts: { api: { web: 1 } } })).statusCode).toBe(422);
    expect((await call(carol, 'PATCH', `${ENVS}/staging`, { process_pod_classes: { web: { web: 'huge' } } })).statusCode).toBe(422);
    expect((await call(carol, 'PATCH', `${ENVS}/staging`, {})).statusCode).toBe(422);
    expect((await call(carol, 'PATCH', `${ENVS}/staging`, { slug: 'x' })).statusCode).toBe(422);
    expect((await call(carol, 'GET', `${ENVS}/nope`)).statusCode).toBe(404);
    expect((await call(carol, 'GET', '/workspaces/acme/projects/nope/envs')).statusCode).toBe(404);
  });

  it('lets only admins protect or unprotect an environment', async () => {
    expect((await call(carol, 'PATCH', `${ENVS}/production`, { protected: true })).statusCode).toBe(403);
    expect((await call(carol, 'POST', ENVS, { name: 'Locked', protected: true })).statusCode).toBe(403);
    const res = await call(alice, 'PATCH', `${ENVS}/production`, { protected: true });
    expect(res.statusCode).toBe(200);
    expect(res.json().protected).toBe(true);
    expect((await call(carol, 'PATCH', `${ENVS}/production`, { protected: false })).statusCode).toBe(403);
    // Other settings stay open to members; the branch whose pushes deploy there does not.
    expect((await call(carol, 'PATCH', `${ENVS}/production`, { name: 'Production' })).statusCode).toBe(200);
    expect((await call(carol, 'PATCH', `${ENVS}/production`, { auto_deploy_branch: 'main' })).statusCode).toBe(403);
  });

  it('keeps environment config: list, set, bulk, delete', async () => {
    const set = await call(carol, 'POST', `${ENVS}/staging/config`, { name: 'API_URL', value: 'https://staging.example' });
    expect(set.statusCode).toBe(201);
    const bulk = await call(carol, 'POST', `${ENVS}/staging/config/bulk`, [
      { name: 'DB_PASSWORD', value: 's3cr3t-db', secret: true },
      { name: 'FEATURE_X', value: 'on', buildtime: true },
      { name: 'API_URL', value: 'https://staging2.example' },
      { name: '9BAD', value: 'x' },
    ]);
    expect(bulk.statusCode).toBe(200);
    expect(bulk.json().map((r: { name: string; result: string }) => [r.name, r.result])).toEqual([
      ['DB_PASSWORD', 'created'],
      ['FEATURE_X', 'created'],
      ['API_URL', 'updated'],
      ['9BAD', 'error'],
    ]);
    expect(bulk.body).not.toContain('s3cr3t-db');
    // A second bulk never replaces an existing secret.
    const again = await call(carol, 'POST', `${ENVS}/staging/config/bulk`, [{ name: 'DB_PASSWORD', value: 'other' }]);
    expect(again.json()).toEqual([expect.objectContaining({ name: 'DB_PASSWORD', result: 'skipped' })]);
    // Ancla's object form (dotenv `raw` and/or `variables`) is the other accepted body (test/ancla-contract); nothing else is.
    const empty = await call(carol, 'POST', `${ENVS}/staging/config/bulk`, { variables: {} });
    expect(empty.json()).toEqual({ created: [], updated: [], skipped: [], errors: [] });
    expect((await call(carol, 'POST', `${ENVS}/staging/config/bulk`, { vars: {} })).statusCode).toBe(422);

    const list = await call(carol, 'GET', `${ENVS}/staging/config`);
    expect(
      list
        .json()
        .map((v: { name: string; value: string; secret: boolean; buildtime: boolean }) => [v.name, v.value, v.secret, v.buildtime]),
    ).toEqual([
      ['API_URL', 'https://staging2.example', false, false],
      ['DB_PASSWORD', '**secret**', true, false],
      ['FEATURE_X', 'on', false, true],
    ]);
    expect(list.body).not.toContain('s3cr3t-db');
    // Production has its own, separate configuration.
    expect((await call(carol, 'GET', `${ENVS}/production/config`)).json()).toEqual([]);

    const id = list.json()[0].id;
    // Production is protected by now (test above): a plain member's write there is refused before any look-up.
    expect((await call(carol, 'DELETE', `${ENVS}/production/config/${id}`)).statusCode).toBe(403);
    expect((await call(alice, 'DELETE', `${ENVS}/production/config/${id}`)).statusCode).toBe(404);
    expect((await call(carol, 'DELETE', `${ENVS}/staging/config/${id}`)).json()).toEqual({ ok: true });
    expect((await call(carol, 'DELETE', `${ENVS}/staging/config/${id}`)).statusCode).toBe(404);
    expect((await call(carol, 'DELETE', `${ENVS}/staging/config/not-a-uuid`)).statusCode).toBe(404);
  });

  it('answers 503 for a deploy when this process runs no pipeline, and 404 for unknown deploys', async () => {
    const res = await call(carol, 'POST', `${ENVS}/staging/deploy`);
    expect(res.statusCode).toBe(503);
    expect(res.json()).toEqual({ status: 503, message: expect.any(String) });
    expect((await call(carol, 'GET', `${ENVS}/staging/deploys`)).json()).toEqual([]);
    expect((await call(carol, 'GET', `${ENVS}/staging/deploys/0190c0de-0000-7000-8000-000000000000`)).statusCode).toBe(404);
    expect((await call(carol, 'PATCH', `${ENVS}/production`, { env_type: 'staging' })).statusCode).toBe(422);
  });

  it('refuses another workspace with 403', async () => {
    for (const [method, url, payload] of [
      ['GET', ENVS],
      ['POST', ENVS, { name: 'mine' }],
      ['GET', `${ENVS}/staging`],
      ['PATCH', `${ENVS}/staging`, { name: 'x' }],
      ['GET', `${ENVS}/staging/config`],
      ['POST', `${ENVS}/staging/config`, { name: 'A', value: 'b' }],
      ['POST', `${ENVS}/staging/config/bulk`, [{ name: 'A', value: 'b' }]],
      ['DELETE', `${ENVS}/staging/config/0190c0de-0000-7000-8000-000000000000`],
      ['GET', `${ENVS}/staging/services/web/config`],
    ] as const) {
      const res = await call(bob, method, url, payload);
      expect(res.statusCode, `${method} ${url}`).toBe(403);
    }
    expect((await call(alice, 'GET', `${ENVS}/staging/config`)).json()).toHaveLength(2);
  });
});
