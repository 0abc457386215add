import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { TestRepo } from '../helpers/git-repo.js';
import { localRuntime } from '../helpers/local-runtime.js';
import { pythonHttpApp } from '../helpers/python-app.js';
import { routerGet } from '../helpers/router-get.js';
import { waitFor } from '../helpers/wait.js';
import { calls, TESTS } from './calls/services.js';

/**
 * Ancla's clients on a service in an environment, its builds, deploys and configuration: each
 * call made as the client makes it (method, `/api/v1` path with its trailing slash, body,
 * User-Agent) against the real server and PostgreSQL, with one real build and deploy through
 * the pipeline, and each answer checked for the fields, and their types, the client decodes
 * (Ancla's Python models refuse null for a `str`, its Go structs a number for a string).
 */

const GO = 'Go-http-client/1.1';
const PYTHON = 'python-httpx/0.28.1';
const NODE = 'node';
const WS = 'acme';
const S = `/api/v1/workspaces/${WS}/projects/shop/envs/staging/services`;
const E = `/api/v1/workspaces/${WS}/projects/shop/envs/staging`;

let h: Harness;
let alice: TestUser;
let mallory: TestUser;
let repo: TestRepo;
const seen: Record<string, string> = {};

/** A request as one of Ancla's clients sends it: its User-Agent and the API key header. */
const call = (user: TestUser, agent: string, method: string, url: string, payload?: unknown) =>
  h.app.inject({
    method: method as 'GET',
    url,
    headers: { ...user.headers, 'user-agent': agent, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
  });

type Kind = 'string' | 'number' | 'boolean' | 'object' | 'array' | 'string|null';

/** The answer holds each field as the client's type has it. */
function decodes(body: Record<string, unknown>, fields: Record<string, Kind>) {
  for (const [name, kind] of Object.entries(fields)) {
    const value = body[name];
    const actual = Array.isArray(value) ? 'array' : value === null ? 'null' : typeof value;
    if (kind === 'string|null') expect(['string', 'null'], `${name}`).toContain(actual);
    else expect(actual, `${name} of ${JSON.stringify(body).slice(0, 200)}`).toBe(kind);
  }
}

const SERVICE: Record<string, Kind> = {
  id: 'string',
  name: 'string',
  slug: 'string',
  platform: 'string',
  github_repository: 'string',
  auto_deploy_branch: 'string',
  process_counts: 'object',
};
const BUILD: Record<string, Kind> = { id: 'string', version: 'number', built: 'boolean', error: 'boolean', created: 'string' };
const DEPLOY: Record<string, Kind> = {
  id: 'string',
  complete: 'boolean',
  error: 'boolean',
  error_detail: 'string',
  job_id: 'string',
  created: 'string',
  updated: 'string',
};
const CONFIG: Record<string, Kind> = { id: 'string', name: 'string', value: 'string', secret: 'boolean', buildtime: 'boolean' };

beforeAll(async () => {
  h = await createHarness(
    { ROUTER_HOST: '127.0.0.1', ROUTER_PORT: 0, RUNTIME_STOP_GRACE_MS: 2000, ROUTER_DRAIN_TIMEOUT_MS: 2000 },
    { jobs: true, runtime: true },
  );
  [alice, mallory] = [await h.user(), await h.user()];
  repo = new TestRepo('slipway-ancla-svc-');
  repo.commit({ 'server.py': pythonHttpApp(`f"hello from {os.environ.get('GREETING')}"`), Procfile: 'web: python3 server.py\n' });
  const v1 = (user: TestUser, method: string, url: string, payload: object) =>
    h.app.inject({ method: method as 'POST', url: `/v1${url}`, headers: user.headers, payload });
  const ws = (await v1(alice, 'POST', '/workspaces', { name: 'Acme' })).json();
  await v1(mallory, 'POST', '/workspaces', { name: 'Globex' });
  expect((await v1(alice, 'POST', '/projects', { name: 'Shop', organization_id: ws.id })).statusCode).toBe(201);
  expect((await v1(alice, 'POST', `/workspaces/${WS}/projects/shop/envs`, { name: 'staging' })).statusCode).toBe(201);
}, 60_000);

afterAll(async () => {
  await h?.close();
  repo?.remove();
});

describe("Ancla's clients on services, builds and deploys", () => {
  it('every call it lists names a test of this file', () => {
    const names = new Set<string>(Object.values(TESTS));
    // (`ancla shell` is proven where the SSH gateway runs: test/ssh.)
    for (const c of calls.filter((served) => served.test && !served.test.startsWith('../')))
      expect(names, `${c.client} ${c.method} ${c.path}`).toContain(c.test.replace(/^services\.test\.ts > /, ''));
    expect(new Set(calls.map((c) => c.client))).toEqual(new Set(['go-cli', 'go-sdk', 'python-sdk', 'ts-sdk']));
  });

  it(TESTS.createService, async () => {
    // The SDKs' body: {name, platform}.
    const res = await call(alice, PYTHON, 'POST', `${S}/`, { name: 'web', platform: 'wind' });
    expect(res.statusCode, res.body).toBe(201);
    decodes(res.json(), SERVICE);
    expect(res.json()).toMatchObject({ name: 'web', slug: 'web', platform: 'wind', github_repository: '', environment: 'staging' });
    seen.service = res.json().id;
    const other = await call(alice, NODE, 'POST', `${S}/`, { name: 'api', platform: 'wind' });
    expect(other.statusCode).toBe(201);
    // Another workspace's member cannot create here.
    expect((await call(mallory, GO, 'POST', `${S}/`, { name: 'evil', platform: 'wind' })).statusCode).toBe(403);
  });

  it(TESTS.updateService, async () => {
    // Python's update_service(**kwargs) sends what it is given; `description` is not a field here.
    const res = await call(alice, PYTHON, 'PATCH', `${S}/web`, {
      github_repository: repo.dir,
      auto_deploy_branch: 'main',
      description: 'shop front',
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers.warning).toBe('299 - "Ignored unknown fields: description"');
    decodes(res.json(), SERVICE);
    expect(res.json()).toMatchObject({ github_repository: repo.dir, auto_deploy_branch: 'main' });
    // A known field with a bad value is still refused, and Slipway's own routes stay strict.
    expect((await call(alice, GO, 'PATCH', `${S}/web`, { auto_deploy_branch: 'no spaces' })).statusCode).toBe(422);
    const strict = await call(alice, GO, 'PATCH', `/v1/applications/${seen.service}/settings`, { description: 'x' });
    expect(strict.statusCode).toBe(422);
  });

  it(TESTS.listServices, async () => {
    for (const agent of [GO, PYTHON, NODE]) {
      const res = await call(alice, agent, 'GET', `${S}/`);
      expect(res.statusCode).toBe(200);
      expect(res.json().map((s: { slug: string }) => s.slug)).toEqual(['api', 'web']);
      for (const s of res.json()) decodes(s, SERVICE);
    }
    expect((await call(mallory, GO, 'GET', `${S}/`)).statusCode).toBe(403);
  });

  it(TESTS.getService, async () => {
    const res = await call(alice, GO, 'GET', `${S}/web`);
    expect(res.statusCode).toBe(200);
    decodes(res.json(), SERVICE);
    expect(res.json().id).toBe(seen.service);
    expect((await call(alice, GO, 'GET', `${S}/nope`)).statusCode).toBe(404);
    expect((await call(mallory, GO, 'GET', `${S}/web`)).statusCode).toBe(403);
  });

  it(TESTS.scaleService, async () => {
    const res = await call(alice, GO, 'POST', `${S}/web/scale`, { process_counts: { web: 2 } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().process_counts).toEqual({ web: 2 });
    // Scaled in staging only: production keeps the application's own counts.
    const prod = await call(alice, GO, 'GET', `/api/v1/workspaces/${WS}/projects/shop/envs/production/services/web`);
    expect(prod.json().process_counts).not.toEqual({ web: 2 });
    expect((await call(alice, GO, 'POST', `${S}/web/scale`, { process_counts: { web: 1 } })).statusCode).toBe(200);
  });

  it(TESTS.setConfig, async () => {
    // Go SDK and Python send {name, value, secret}; the CLI {name, value}.
    const created = await call(alice, PYTHON, 'POST', `${S}/web/config/`, { name: 'GREETING', value: 'ancla', secret: false });
    expect(created.statusCode, created.body).toBe(201);
    decodes(created.json(), CONFIG);
    const replaced = await call(alice, GO, 'POST', `${S}/web/config/`, { name: 'GREETING', value: 'slipway' });
    expect(replaced.statusCode).toBe(200);
    expect(replaced.json()).toMatchObject({ id: created.json().id, value: 'slipway' });
    const secret = await call(alice, NODE, 'POST', `${S}/web/config/`, { name: 'TOKEN', value: 's3cr3t-value', secret: true });
    expect(secret.statusCode).toBe(201);
    expect(secret.body).not.toContain('s3cr3t-value');
    expect((await call(mallory, GO, 'POST', `${S}/web/config/`, { name: 'X', value: 'y' })).statusCode).toBe(403);
  });

  it(TESTS.listConfig, async () => {
    const res = await call(alice, GO, 'GET', `${S}/web/config/`);
    expect(res.statusCode).toBe(200);
    expect(
      res
        .json()
        .map((v: { name: string }) => v.name)
        .sort(),
    ).toEqual(['GREETING', 'TOKEN']);
    for (const v of res.json()) decodes(v, CONFIG);
    expect(res.body).not.toContain('s3cr3t-value');
  });

  it(TESTS.resolvedConfig, async () => {
    const resolved = await call(alice, GO, 'GET', `${S}/web/config/resolved`);
    expect(resolved.statusCode).toBe(200);
    expect(resolved.json()).toMatchObject({ environment: 'staging', service: 'web' });
    const documented = await call(alice, GO, 'GET', `/v1/workspaces/${WS}/projects/shop/envs/staging/services/web/config`);
    expect(documented.json()).toEqual(resolved.json());
  });

  it(
    TESTS.deployService,
    async () => {
      // The CLI, Python and TypeScript SDKs send no body.
      const res = await call(alice, GO, 'POST', `${S}/web/deploy`);
      expect(res.statusCode, res.body).toBe(202);
      decodes(res.json(), { build_id: 'string', version: 'number', deploy_id: 'string', job_id: 'string', error: 'boolean' });
      expect(res.json().error).toBe(false);
      Object.assign(seen, { build: res.json().build_id, version: String(res.json().version), envDeploy: res.json().deploy_id });
      // The CLI follows the build log until `success`, then the pipeline status until the deploy's `success`.
      const log = await waitFor(
        'the build',
        async () => {
          const r = (await call(alice, GO, 'GET', `${S}/web/builds/${seen.version}/log`)).json();
          return r.status === 'building' ? null : r;
        },
        120_000,
        200,
      );
      expect(log.status, log.log_text).toBe('success');
      const status = await waitFor(
        'the deploy',
        async () => {
          const r = (await call(alice, NODE, 'GET', `${S}/web/pipeline-status`)).json();
          return r.deploy && r.deploy.status !== 'deploying' ? r : null;
        },
        120_000,
        200,
      );
      expect(status.deploy.status).toBe('success');
      const { status: code, body } = await routerGet(localRuntime(h.ctx).router.port, 'web.staging.shop.acme.localhost');
      expect({ code, body }).toEqual({ code: 200, body: 'hello from slipway' });
      expect((await call(mallory, GO, 'POST', `${S}/web/deploy`)).statusCode).toBe(403);
    },
    240_000,
  );

  it(TESTS.pipelineStatus, async () => {
    const res = await call(alice, GO, 'GET', `${S}/web/pipeline-status`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ build: { status: 'success' }, release: { status: 'success' }, deploy: { status: 'success' } });
    // The Go SDK names the service by id in deploy, scale and pipeline-status.
    const id = (await call(alice, GO, 'GET', `${S}/web`)).json().id;
    const byId = await call(alice, GO, 'GET', `${S}/${id}/pipeline-status`);
    expect(byId.statusCode, byId.body).toBe(200);
    expect(byId.json()).toEqual(res.json());
    expect((await call(alice, GO, 'POST', `${S}/${id}/scale`, { process_counts: { web: 1 } })).statusCode).toBe(200);
    // The id of an application of another organization is no name here, and a stranger learns nothing by it.
    expect((await call(mallory, GO, 'GET', `${S}/${id}/pipeline-status`)).statusCode).toBe(403);
  });

  it(TESTS.listBuilds, async () => {
    const res = await call(alice, PYTHON, 'GET', `${S}/web/builds/`);
    expect(res.statusCode).toBe(200);
    expect(res.json().items).toHaveLength(1);
    decodes(res.json().items[0], BUILD);
    expect(res.json().items[0]).toMatchObject({ id: seen.build, built: true, error: false, status: 'success' });
  });

  it(TESTS.getBuild, async () => {
    const byVersion = await call(alice, GO, 'GET', `${S}/web/builds/${seen.version}`);
    expect(byVersion.statusCode).toBe(200);
    decodes(byVersion.json(), BUILD);
    const byId = await call(alice, PYTHON, 'GET', `/api/v1/builds/${seen.build}`);
    expect(byId.statusCode).toBe(200);
    decodes(byId.json(), BUILD);
    expect(byId.json()).toEqual(byVersion.json());
    expect((await call(mallory, PYTHON, 'GET', `/api/v1/builds/${seen.build}`)).statusCode).toBe(403);
    expect((await call(alice, GO, 'GET', `${S}/web/builds/99`)).statusCode).toBe(404);
  });

  it(TESTS.buildLog, async () => {
    const byVersion = await call(alice, GO, 'GET', `${S}/web/builds/${seen.version}/log`);
    decodes(byVersion.json(), { status: 'string', version: 'number', log_text: 'string' });
    // Python reads it as {status, log_text}; TypeScript as a build.
    const byId = await call(alice, NODE, 'GET', `/api/v1/builds/${seen.build}/log`);
    expect(byId.statusCode).toBe(200);
    decodes(byId.json(), { ...BUILD, status: 'string', log_text: 'string' });
    expect(byId.json().log_text).toBe(byVersion.json().log_text);
  });

  it(TESTS.listDeploys, async () => {
    const page = await call(alice, PYTHON, 'GET', `${S}/web/deploys/`);
    expect(page.statusCode).toBe(200);
    expect(page.json().items).toHaveLength(1);
    decodes(page.json().items[0], DEPLOY);
    expect(page.json().items[0]).toMatchObject({ complete: true, error: false, error_detail: '' });
    seen.deployment = page.json().items[0].id;
    expect((await call(alice, NODE, 'GET', `${S}/web/deploys/`)).json().items).toEqual(page.json().items);
    // The CLI (`deploys list`, `logs`) decodes the bare array Ancla's OpenAPI declares.
    const bare = await call(alice, GO, 'GET', `${S}/web/deploys/`);
    expect(bare.json()).toEqual(page.json().items);
    expect((await call(alice, GO, 'GET', `${S}/api/deploys/`)).json()).toEqual([]);
  });

  it(TESTS.getDeploy, async () => {
    // The CLI's ids come from the service's deploy list: deployments, read at the environment.
    const atEnv = await call(alice, GO, 'GET', `${E}/deploys/${seen.deployment}`);
    expect(atEnv.statusCode, atEnv.body).toBe(200);
    decodes(atEnv.json(), { ...DEPLOY, error_detail: 'string|null' });
    expect(atEnv.json()).toMatchObject({ id: seen.deployment, complete: true, error: false });
    // An environment deploy's own id answers too.
    const envDeploy = await call(alice, GO, 'GET', `${E}/deploys/${seen.envDeploy}`);
    expect(envDeploy.json()).toMatchObject({ id: seen.envDeploy, complete: true, job_id: expect.any(String) });
    const atService = await call(alice, GO, 'GET', `${S}/web/deploys/${seen.deployment}`);
    decodes(atService.json(), DEPLOY);
    const byId = await call(alice, PYTHON, 'GET', `/api/v1/deploys/${seen.deployment}/detail`);
    expect(byId.statusCode).toBe(200);
    decodes(byId.json(), DEPLOY);
    expect(byId.json()).toEqual(atService.json());
    expect((await call(mallory, GO, 'GET', `/api/v1/deploys/${seen.deployment}/detail`)).statusCode).toBe(403);
    // Another environment's deploy path does not show it.
    const prod = `/api/v1/workspaces/${WS}/projects/shop/envs/production/deploys/${seen.deployment}`;
    expect((await call(alice, GO, 'GET', prod)).statusCode).toBe(404);
  });

  it(TESTS.deployLog, async () => {
    const atEnv = await call(alice, GO, 'GET', `${E}/deploys/${seen.deployment}/log`);
    expect(atEnv.statusCode).toBe(200);
    decodes(atEnv.json(), { status: 'string', log_text: 'string' });
    expect(atEnv.json().status).toBe('complete');
    const byId = await call(alice, NODE, 'GET', `/api/v1/deploys/${seen.deployment}/log`);
    expect(byId.json()).toMatchObject({ status: 'complete', log_text: atEnv.json().log_text });
    const envLog = await call(alice, GO, 'GET', `${E}/deploys/${seen.envDeploy}/log`);
    expect(envLog.json().log_text).toContain('web | ');
  });

  it(
    TESTS.triggerBuild,
    async () => {
      // The CLI's `builds trigger --strategy` sends a field Slipway does not know; the Go SDK posts to `builds/`.
      const res = await call(alice, GO, 'POST', `${S}/web/builds/trigger`, { strategy: 'dockerfile' });
      expect(res.statusCode, res.body).toBe(202);
      expect(res.headers.warning).toContain('strategy');
      decodes(res.json(), { build_id: 'string', version: 'number' });
      expect(res.json().version).toBe(Number(seen.version) + 1);
      // The Go SDK's TriggerBuild posts to `builds/` (same handler; checked here without a second build).
      expect((await call(mallory, GO, 'POST', `${S}/web/builds/`)).statusCode).toBe(403);
      await waitFor(
        'the triggered builds',
        async () => {
          const items = (await call(alice, GO, 'GET', `${S}/web/builds/`)).json().items as Array<{ status: string }>;
          return items.every((b) => b.status !== 'building');
        },
        120_000,
        200,
      );
    },
    240_000,
  );

  it(TESTS.failedDeploy, async () => {
    // `api` has no repository to build from.
    const res = await call(alice, NODE, 'POST', `${S}/api/deploy`);
    expect(res.statusCode, res.body).toBe(202);
    expect(res.json()).toMatchObject({ build_id: '', error: true });
    expect(res.json().error_detail.length).toBeGreaterThan(0);
    const record = (await call(alice, GO, 'GET', `${E}/deploys/${res.json().deploy_id}`)).json();
    expect(record).toMatchObject({ error: true, complete: false });
    seen.failed = res.json().deploy_id;
  });

  it(TESTS.configOnlyDeploy, async () => {
    // `ancla config set --restart` posts {config_only: true} and reads `deploy_id`.
    const res = await call(alice, GO, 'POST', `${S}/web/deploy`, { config_only: true });
    expect(res.statusCode, res.body).toBe(202);
    expect(res.headers.warning).toContain('config_only');
    decodes(res.json(), { deploy_id: 'string', build_id: 'string' });
    seen.configOnly = res.json().deploy_id;
  });

  it(TESTS.envDeploy, async () => {
    const started = await call(alice, GO, 'POST', `${E}/deploy?service=web`);
    expect(started.statusCode).toBe(202);
    decodes(started.json(), { id: 'string', complete: 'boolean', error: 'boolean', job_id: 'string' });
    expect(started.json().services[0]).toMatchObject({ service: 'web', job_id: started.json().job_id });
    seen.envDeploy2 = started.json().id;
  });

  it(
    TESTS.envDeploys,
    async () => {
      // Both deploys started above run to the end (nothing is left running when the server stops).
      const list = await waitFor(
        'the later deploys',
        async () => {
          const all = (await call(alice, GO, 'GET', `${E}/deploys/`)).json() as Array<{ id: string; complete: boolean; error: boolean }>;
          return all.every((d) => d.complete || d.error) ? all : null;
        },
        180_000,
        200,
      );
      expect(list.map((d) => d.id)).toEqual([seen.envDeploy2, seen.configOnly, seen.failed, seen.envDeploy]);
      for (const d of list) {
        decodes(d, { id: 'string', complete: 'boolean', error: 'boolean', created: 'string' });
        expect(d).toMatchObject(d.id === seen.failed ? { error: true } : { complete: true, error: false });
      }
    },
    240_000,
  );

  it(TESTS.deleteConfig, async () => {
    const list = (await call(alice, GO, 'GET', `${S}/web/config/`)).json() as Array<{ id: string; name: string }>;
    const byId = await call(alice, GO, 'DELETE', `${S}/web/config/${list.find((v) => v.name === 'TOKEN')!.id}`);
    expect(byId.statusCode).toBe(204);
    // Python's delete_config passes the variable's name.
    expect((await call(mallory, PYTHON, 'DELETE', `${S}/web/config/GREETING`)).statusCode).toBe(403);
    // A body-less route ignores an object's fields, and still refuses what is no object.
    expect((await call(alice, GO, 'DELETE', `${S}/web/config/GREETING`, [])).statusCode).toBe(422);
    const withFields = await call(alice, GO, 'DELETE', `${S}/web/config/nope`, { force: true });
    expect([withFields.statusCode, withFields.headers.warning]).toEqual([404, '299 - "Ignored unknown fields: force"']);
    expect((await call(alice, PYTHON, 'DELETE', `${S}/web/config/GREETING`)).statusCode).toBe(204);
    expect((await call(alice, PYTHON, 'DELETE', `${S}/web/config/GREETING`)).statusCode).toBe(404);
    expect((await call(alice, GO, 'GET', `${S}/web/config/`)).json()).toEqual([]);
  });

  it(TESTS.deleteService, async () => {
    const host = 'web.staging.shop.acme.localhost';
    expect((await routerGet(localRuntime(h.ctx).router.port, host)).status).toBe(200);
    // Another workspace's member deletes nothing.
    expect((await call(mallory, PYTHON, 'DELETE', `${S}/web/`)).statusCode).toBe(403);
    const scratch = await call(alice, GO, 'POST', `${S}/`, { name: 'scratch', platform: 'wind' });
    expect(scratch.statusCode).toBe(201);
    expect((await call(alice, GO, 'DELETE', `${S}/scratch/`)).statusCode).toBe(204);
    expect((await call(alice, PYTHON, 'DELETE', `${S}/api/`)).statusCode).toBe(204);
    // The deployed service: its instances stop and the edge no longer answers its host name.
    const deployed = await call(alice, NODE, 'DELETE', `${S}/web/`);
    expect(deployed.statusCode, deployed.body).toBe(204);
    expect((await routerGet(localRuntime(h.ctx).router.port, host)).status).toBe(404);
    expect((await call(alice, GO, 'GET', `${S}/web`)).statusCode).toBe(404);
    expect((await call(alice, NODE, 'DELETE', `${S}/web/`)).statusCode).toBe(404);
  });
});
