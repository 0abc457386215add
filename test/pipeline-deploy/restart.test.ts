import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERRUPTED_DETAIL } from '../../src/pipeline/deploy/deploy-runner.js';
import { localRuntime } from '../helpers/local-runtime.js';
import { startPlatformProcess, type PlatformProcess } from '../helpers/platform-process.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { routerGet } from '../helpers/router-get.js';
import { waitFor } from '../helpers/wait.js';
import { deployableApp, NODE_APP, settled } from './fixtures.js';

const ENV = { ROUTER_HOST: '127.0.0.1', ROUTER_PORT: 0, RUNTIME_RESTART_BACKOFF_MS: 50, RUNTIME_STOP_GRACE_MS: 2000 } as const;

let h: Harness;
let alice: TestUser;

beforeAll(async () => {
  h = await createHarness(ENV, { jobs: true, runtime: true });
  alice = await h.user();
});
afterAll(async () => {
  await h?.close();
});

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('platform restart', () => {
  it('stops processes with the platform, fails an interrupted deploy clearly, and brings the previous release back', async () => {
    const app = await deployableApp(h, alice, { deployment_timeout: 120 });
    const host = `${app.slugs.app}.${app.slugs.project}.${app.slugs.org}.localhost`;
    const v1 = await app.release({ 'app.js': NODE_APP('v1') }, 'web: node app.js\n');
    const first = (await h.app.inject({ method: 'POST', url: `/v1/releases/${v1}/deploy`, headers: alice.headers })).json();
    expect((await settled(h, alice, first.deployment_id)).complete).toBe(true);
    expect((await routerGet(localRuntime(h.ctx).router.port, host)).body).toBe('v1:hello');
    const v1Pid = (await h.ctx.db.selectFrom('instances').select('pid').where('application_id', '=', app.appId).executeTakeFirstOrThrow())
      .pid!;

    // v2 takes a minute to listen: the platform stops while it rolls out.
    const v2 = await app.release({ 'app.js': `setTimeout(() => { ${NODE_APP('v2')} }, 60000)` }, 'web: node app.js\n');
    const second = (await h.app.inject({ method: 'POST', url: `/v1/releases/${v2}/deploy`, headers: alice.headers })).json();
    await waitFor('rollout of v2', async () => {
      const d = (await h.app.inject({ method: 'GET', url: `/v1/deployments/${second.deployment_id}/log`, headers: alice.headers })).json();
      return d.deploy_step?.current === 3;
    });
    const v2Pid = (await h.ctx.db.selectFrom('instances').select('pid').where('release_id', '=', v2).executeTakeFirstOrThrow()).pid!;

    await h.ctx.jobs!.stop();
    await h.ctx.runtime!.shutdown();
    expect(alive(v1Pid)).toBe(false);
    expect(alive(v2Pid)).toBe(false);

    const again = await startPlatformProcess(h);
    try {
      const d = (
        await again.app.inject({ method: 'GET', url: `/v1/deployments/${second.deployment_id}/detail`, headers: alice.headers })
      ).json();
      expect(d).toMatchObject({ error: true, complete: false, status: 'error', error_detail: INTERRUPTED_DETAIL });
      const served = await waitFor('v1 served again', async () => {
        const r = await routerGet(localRuntime(again.ctx).router.port, host).catch(() => null);
        return r?.status === 200 ? r : null;
      });
      expect(served.body).toBe('v1:hello');
      // The router switches as soon as v1 answers; the instance record follows a moment later.
      const rows = await waitFor('v1 recorded healthy', async () => {
        const r = await h.ctx.db
          .selectFrom('instances')
          .select(['release_id', 'worker_id', 'state'])
          .where('application_id', '=', app.appId)
          .execute();
        return r.length === 1 && r[0]!.state === 'healthy' ? r : null;
      });
      expect(rows).toEqual([{ release_id: v1, worker_id: again.ctx.jobs!.workerId, state: 'healthy' }]);
      // The application's queue is not blocked: a new deploy runs.
      const v3 = await app.release({ 'app.js': NODE_APP('v3') }, 'web: node app.js\n');
      const third = (await again.app.inject({ method: 'POST', url: `/v1/releases/${v3}/deploy`, headers: alice.headers })).json();
      const done = await waitFor('v3', async () => {
        const x = (
          await again.app.inject({ method: 'GET', url: `/v1/deployments/${third.deployment_id}/detail`, headers: alice.headers })
        ).json();
        return x.complete || x.error ? x : null;
      });
      expect(done.complete).toBe(true);
      expect((await routerGet(localRuntime(again.ctx).router.port, host)).body).toBe('v3:hello');
    } finally {
      await again.stop();
    }
  });
});

describe('a second worker process', () => {
  it("starting beside a running worker leaves that worker's instances alone, and the application's jobs stay with it", async () => {
    // h's own workers and runtime were stopped by the test above: two fresh workers share the database.
    const first = await startPlatformProcess(h);
    let second: PlatformProcess | undefined;
    try {
      const app = await deployableApp(h, alice);
      const host = `${app.slugs.app}.${app.slugs.project}.${app.slugs.org}.localhost`;
      const v1 = await app.release({ 'app.js': NODE_APP('v1') }, 'web: node app.js\n');
      const d = (await first.app.inject({ method: 'POST', url: `/v1/releases/${v1}/deploy`, headers: alice.headers })).json();
      const done = await waitFor('v1 deployed', async () => {
        const x = (
          await first.app.inject({ method: 'GET', url: `/v1/deployments/${d.deployment_id}/detail`, headers: alice.headers })
        ).json();
        return x.complete || x.error ? x : null;
      });
      expect(done.complete).toBe(true);
      const before = await h.ctx.db
        .selectFrom('instances')
        .select(['id', 'pid'])
        .where('application_id', '=', app.appId)
        .where('worker_id', '=', first.ctx.jobs!.workerId)
        .execute();
      expect(before).toHaveLength(1);

      second = await startPlatformProcess(h); // before: its start killed and forgot the first worker's instance as a "leftover"
      expect(alive(before[0]!.pid!)).toBe(true);
      const after = await h.ctx.db
        .selectFrom('instances')
        .select(['id', 'pid', 'restart_count'])
        .where('application_id', '=', app.appId)
        .where('worker_id', '=', first.ctx.jobs!.workerId)
        .execute();
      expect(after).toEqual([{ ...before[0], restart_count: 0 }]);
      expect((await routerGet(localRuntime(first.ctx).router.port, host)).body).toBe('v1:hello');

      // The application's jobs stay with the worker running it, whichever process is asked:
      // otherwise the second would run a copy of v2 while the first kept serving v1.
      const v2 = await app.release({ 'app.js': NODE_APP('v2') }, 'web: node app.js\n');
      const d2 = (await second!.app.inject({ method: 'POST', url: `/v1/releases/${v2}/deploy`, headers: alice.headers })).json();
      const done2 = await waitFor('v2 deployed', async () => {
        const x = (
          await second!.app.inject({ method: 'GET', url: `/v1/deployments/${d2.deployment_id}/detail`, headers: alice.headers })
        ).json();
        return x.complete || x.error ? x : null;
      });
      expect(done2.complete).toBe(true);
      expect((await routerGet(localRuntime(first.ctx).router.port, host)).body).toBe('v2:hello');
      const rows = await h.ctx.db
        .selectFrom('instances')
        .select(['release_id', 'worker_id'])
        .where('application_id', '=', app.appId)
        .execute();
      expect(rows).toEqual([{ release_id: v2, worker_id: first.ctx.jobs!.workerId }]);
      expect(localRuntime(second!.ctx).instancesOf(app.appId, app.envId)).toEqual([]);
    } finally {
      await second?.stop();
      await first.stop();
    }
  });
});
