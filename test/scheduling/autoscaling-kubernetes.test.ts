/**
 * Issue 17, autoscaling with RUNTIME=kubernetes (the platform's own loop, against the fake
 * API server): CPU from metrics.k8s.io above the target scales a process type's Deployment
 * up to max, below it back down to min after the cooldown, and a count below min is raised.
 */
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MetricsSampler } from '../../src/modules/observability/index.js';
import type { AppUsage } from '../../src/platform/runtime/application-runtime.js';
import { LABEL } from '../../src/platform/runtime/kubernetes/names.js';
import { FakeKubeApi } from '../helpers/fake-kube-api.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';
import { deployableApp, settled } from '../pipeline-deploy/fixtures.js';

let h: Harness;
let kube: FakeKubeApi;
let kubeconfig: string;
let alice: TestUser;

beforeAll(async () => {
  kube = await FakeKubeApi.start();
  kubeconfig = join(tmpdir(), `slipway-kubeconfig-${randomBytes(4).toString('hex')}.json`);
  writeFileSync(kubeconfig, kube.kubeConfig().exportConfig());
  h = await createHarness(
    { RUNTIME: 'kubernetes', KUBECONFIG: kubeconfig, KUBERNETES_NAMESPACE_PREFIX: 'apps-', OBSERVABILITY_SAMPLE_SECONDS: 1 },
    { jobs: true, runtime: true },
  );
  alice = await h.user();
}, 60_000);
afterAll(async () => {
  await h?.close();
  await kube?.stop();
  if (kubeconfig) rmSync(kubeconfig, { force: true });
});

const api = async (method: string, url: string, payload?: unknown) => {
  const r = await h.app.inject({
    method: method as 'GET',
    url: `/v1${url}`,
    headers: alice.headers,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
  return { status: r.statusCode, body: r.body ? r.json() : undefined };
};

describe('autoscaling on CPU with the Kubernetes runtime', () => {
  it('raises a count below min, scales the Deployment up to max on high CPU and down to min after the cooldown', async () => {
    const app = await deployableApp(h, alice);
    const rel = await app.release({}, 'web: httpd -f -p $PORT\nworker: sleep 100000\n');
    // A pushed image, as a Dockerfile build with REGISTRY_URL leaves it (the fake cluster pulls nothing).
    await h.ctx.db
      .updateTable('images')
      .set({ image_metadata: JSON.stringify({ registry_reference: 'registry.test/app:v1', manifest_digest: `sha256:${'a'.repeat(64)}` }) })
      .where('application_id', '=', app.appId)
      .execute();
    const deploy = await api('POST', `/releases/${rel}/deploy`);
    expect(deploy.status).toBe(202);
    const d = await settled(h, alice, deploy.body.deployment_id);
    expect(d.status, d.deploy_log).toBe('complete');

    const workerDeployment = () =>
      kube
        .list('deployments')
        .find((o) => o.metadata.labels?.[LABEL.applicationId] === app.appId && o.metadata.labels?.[LABEL.processType] === 'worker');
    const replicas = () => workerDeployment()?.spec?.replicas ?? 0;
    expect(replicas()).toBe(0);

    kube.podMetrics = () => ({ cpu: '10m', memory: '64Mi' });
    const put = await api('PUT', `/applications/${app.appId}/autoscaling/worker`, {
      min: 1,
      max: 4,
      target: { cpu_percent: 50 },
      cooldown_seconds: 2,
    });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    await waitFor('one worker replica', () => replicas() === 1, 30_000);

    // 900m per pod against the m1.large request of 500m: 180% for a target of 50%.
    kube.podMetrics = () => ({ cpu: '900m', memory: '64Mi' });
    await waitFor('four worker replicas', () => replicas() === 4, 30_000);
    kube.podMetrics = () => ({ cpu: '5m', memory: '64Mi' });
    await waitFor('back to one worker replica', () => replicas() === 1, 30_000);

    // Without metrics-server there is no CPU reading: nothing changes (rather than a scale-down to min on "0%").
    kube.podMetrics = null;
    await api('PUT', `/applications/${app.appId}/autoscaling/worker`, { min: 1, max: 4, target: { cpu_percent: 50 }, cooldown_seconds: 0 });
    await h.app.inject({
      method: 'POST',
      url: `/v1/applications/${app.appId}/scale`,
      headers: alice.headers,
      payload: { process_counts: { worker: 3 } },
    });
    await waitFor('three worker replicas', () => replicas() === 3, 30_000);
    const samples = async () =>
      Number(
        (await sql<{ n: string }>`SELECT count(*) AS n FROM metric_samples WHERE application_id = ${app.appId}`.execute(h.ctx.db)).rows[0]!
          .n,
      );
    const seen = await samples();
    await waitFor('three samples without metrics', async () => (await samples()) >= seen + 3, 30_000);
    expect(replicas()).toBe(3);

    const events = (await api('GET', `/applications/${app.appId}/scale-events`)).body.items.reverse();
    expect(events.map((e: { from: number; to: number }) => [e.from, e.to])).toEqual([
      [0, 1],
      [1, 4],
      [4, 1],
    ]);
    expect(events[0].reason).toBe('below the minimum of 1');
    expect(events[1].reason).toBe('CPU 180% per instance against a target of CPU 50%: scaled up');
    expect(events[2].reason).toContain('after the cooldown of 2s: scaled down');
    expect(events.every((e: { process_type: string }) => e.process_type === 'worker')).toBe(true);
  }, 120_000);

  it('hands a sample of the shared cluster to one worker only: the one whose sample was stored evaluates it', async () => {
    kube.podMetrics = () => ({ cpu: '20m', memory: '64Mi' });
    const received: string[][] = [[], []];
    const samplers = received.map(
      (got) =>
        new MetricsSampler(h.ctx.db, h.ctx.runtime!, 3600, console, [
          async (usage: AppUsage[]) => {
            got.push(...usage.map((u) => u.applicationId));
          },
        ]),
    );
    // Two workers sampling the same cluster in the same interval (an hour far ahead: no other sampler writes there).
    await Promise.all([
      samplers[0]!.sampleOnce(new Date('2030-01-01T00:10:00Z')),
      samplers[1]!.sampleOnce(new Date('2030-01-01T00:20:00Z')),
    ]);
    const apps = await h.ctx.db
      .selectFrom('metric_samples')
      .select('application_id')
      .where('sampled_at', '=', new Date('2030-01-01T00:00:00Z'))
      .execute();
    expect(apps.length).toBeGreaterThan(0);
    expect([...received[0]!, ...received[1]!].sort()).toEqual(apps.map((a) => a.application_id).sort());
  });
});
