/**
 * Issue 35, goal 5: a configuration change on the image already serving is served as soon as its
 * instances are healthy, not after the stability window; the previous instances stand by through
 * the window and take the traffic back when a new one crashes in it. Against a real server (real
 * PostgreSQL, pipeline, sandboxed instances and the router), through the HTTP API.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { localRuntime } from '../helpers/local-runtime.js';
import { routerGet } from '../helpers/router-get.js';
import { waitFor } from '../helpers/wait.js';
import { deployableApp, NODE_APP, settled } from './fixtures.js';

let h: Harness;
let alice: TestUser;

beforeAll(async () => {
  h = await createHarness(
    {
      ROUTER_HOST: '127.0.0.1',
      ROUTER_PORT: 0,
      RUNTIME_RESTART_BACKOFF_MS: 200,
      RUNTIME_STOP_GRACE_MS: 1000,
      ROUTER_DRAIN_TIMEOUT_MS: 1000,
    },
    { jobs: true, runtime: true },
  );
  alice = await h.user();
});

afterAll(async () => {
  await h?.close();
});

const api = async (method: 'GET' | 'PATCH' | 'POST', url: string, payload?: object) => {
  const r = await h.app.inject({ method, url, headers: alice.headers, ...(payload ? { payload } : {}) });
  expect(r.statusCode, r.body).toBeLessThan(300);
  return r.json();
};
const served = async (host: string) => (await routerGet(localRuntime(h.ctx).router.port, host).catch(() => ({ body: '' }))).body;

describe('a configuration-only release', () => {
  it('is served once healthy, inside the stability window; a crash in the window routes back to the previous release', async () => {
    const app = await deployableApp(h, alice, { stability_window: 0 });
    const host = `${app.slugs.app}.${app.slugs.project}.${app.slugs.org}.localhost`;
    const v1 = await app.release({ 'app.js': NODE_APP('v1') }, 'web: node app.js\n');
    expect((await settled(h, alice, (await api('POST', `/v1/releases/${v1}/deploy`)).deployment_id)).complete).toBe(true);
    expect(await served(host)).toBe('v1:hello');

    // A window far longer than the test: only the early switch can serve the new value before it ends.
    await api('PATCH', `/v1/applications/${app.appId}/settings`, { stability_window: 600 });
    await api('POST', `/v1/configurations/${app.appId}/bulk`, { variables: { GREETING: 'fresh' } });
    const { deployment_id } = await api('POST', `/v1/applications/${app.appId}/config-release`);
    await waitFor('the new configuration served', async () => (await served(host)) === 'v1:fresh');
    const during = await api('GET', `/v1/deployments/${deployment_id}/detail`);
    expect(during).toMatchObject({ complete: false, error: false });
    expect(during.deploy_log).toContain('the previous instances stand by');

    // The new instance crashes inside the window: the previous one serves again, and the deployment fails.
    await routerGet(localRuntime(h.ctx).router.port, host, '/crash').catch(() => undefined);
    const d = await settled(h, alice, deployment_id);
    expect(d).toMatchObject({ error: true, error_code: 'crash_loop' });
    expect(d.deploy_log).toContain('routes to the previous release again');
    expect(d.error_detail).toContain('the previous release keeps serving');
    expect(await served(host)).toBe('v1:hello');
  });

  it('retires the previous instances once the window passes, and the new ones keep serving', async () => {
    const app = await deployableApp(h, alice, { stability_window: 0 });
    const host = `${app.slugs.app}.${app.slugs.project}.${app.slugs.org}.localhost`;
    const v1 = await app.release({ 'app.js': NODE_APP('v1') }, 'web: node app.js\n');
    expect((await settled(h, alice, (await api('POST', `/v1/releases/${v1}/deploy`)).deployment_id)).complete).toBe(true);
    await api('PATCH', `/v1/applications/${app.appId}/settings`, { stability_window: 1 });
    await api('POST', `/v1/configurations/${app.appId}/bulk`, { variables: { GREETING: 'later' } });
    const { release_id, deployment_id } = await api('POST', `/v1/applications/${app.appId}/config-release`);
    const d = await settled(h, alice, deployment_id);
    expect(d).toMatchObject({ complete: true, error: false });
    expect(d.deploy_log).toContain('the previous instances stand by');
    expect(await served(host)).toBe('v1:later');
    const rows = await h.ctx.db.selectFrom('instances').select('release_id').where('application_id', '=', app.appId).execute();
    expect(rows).toEqual([{ release_id }]);
  });
});
