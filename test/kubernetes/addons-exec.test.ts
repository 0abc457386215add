/**
 * Issues 31 and 33 on RUNTIME=kubernetes, through the HTTP API against the fake API server
 * (test/helpers/fake-kube-api.ts; no real cluster here): add-ons become a CloudNativePG Cluster
 * and a Redis StatefulSet in the organization's namespace, ready when the cluster says so, reached
 * through their Service and only from the attached applications' pods; `slipway exec` runs in a
 * pod through the `exec` subresource (WebSocket, v5/v4.channel.k8s.io), which the fake answers by
 * really running the command.
 */
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../helpers/harness.js';
import { FakeKubeApi } from '../helpers/fake-kube-api.js';
import { waitFor } from '../helpers/wait.js';
import { createApp, type TestApp } from '../pipeline-build/fixtures.js';

let h: Harness;
let kube: FakeKubeApi;
let kubeconfig: string;
let t: TestApp;
let namespace: string;

const api = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) =>
  h.app.inject({ method, url: `/v1${url}`, headers: t.user.headers, ...(payload ? { payload } : {}) });
const addons = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, payload?: object) =>
  api(method, `/organizations/${t.orgSlug}/addons${path}`, payload);

async function running(name: string) {
  return waitFor(
    `add-on ${name} running`,
    async () => {
      const view = (await addons('GET', `/${name}`)).json();
      return view.status === 'running' ? view : null;
    },
    20_000,
    50,
  );
}

beforeAll(async () => {
  kube = await FakeKubeApi.start({ tickMs: 20 });
  kubeconfig = join(tmpdir(), `slipway-kubeconfig-${randomBytes(4).toString('hex')}.json`);
  writeFileSync(kubeconfig, kube.kubeConfig().exportConfig());
  h = await createHarness(
    { RUNTIME: 'kubernetes', KUBECONFIG: kubeconfig, KUBERNETES_NAMESPACE_PREFIX: 'apps-' },
    { jobs: true, runtime: true },
  );
  t = await createApp(h);
  namespace = `apps-${t.orgSlug}`;
}, 60_000);

afterAll(async () => {
  await h?.close();
  await kube?.stop();
  if (kubeconfig) rmSync(kubeconfig, { force: true });
});

describe('add-ons on Kubernetes (issue 31)', () => {
  it('makes a Postgres add-on a CloudNativePG Cluster and a Redis add-on a StatefulSet, running once the cluster says they are ready', async () => {
    const pg = await addons('POST', '', { name: 'db', kind: 'postgres' });
    expect(pg.statusCode, pg.body).toBe(201);
    expect(pg.json()).toMatchObject({ status: 'creating', status_detail: 'waiting for the cluster' });
    const redis = await addons('POST', '', { name: 'cache', kind: 'redis' });
    expect(redis.statusCode, redis.body).toBe(201);
    await running('db');
    await running('cache');

    // The organization's namespace, restricted, made for the add-on (no application deployed yet).
    expect(kube.get('namespaces', undefined, namespace)!.metadata.labels).toMatchObject({
      'pod-security.kubernetes.io/enforce': 'restricted',
    });
    const [cluster] = kube.list('clusters', namespace);
    expect(cluster!.spec).toMatchObject({
      instances: 1,
      storage: { size: '1Gi' },
      bootstrap: { initdb: { owner: 'app', database: 'app' } },
    });
    const secret = kube.get('secrets', namespace, cluster!.spec.bootstrap.initdb.secret.name)!;
    expect(Buffer.from(secret.data.password, 'base64').toString()).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // The Redis pod went through the fake's restricted Pod Security admission, its claim made.
    const [set] = kube.list('statefulsets', namespace);
    expect(set!.status.readyReplicas).toBe(1);
    expect(kube.get('pods', namespace, `${set!.metadata.name}-0`)).toBeDefined();
    expect(kube.get('persistentvolumeclaims', namespace, `data-${set!.metadata.name}-0`)).toBeDefined();
    // Nothing answered holds a password.
    expect(JSON.stringify([pg.json(), redis.json(), (await addons('GET', '')).json()])).not.toMatch(/password|:\/\//);
  });

  it('gives the attached application the Service address and admits only its pods; SQL through the platform is refused there', async () => {
    const attached = await addons('POST', '/db/attachments', { application_id: t.appId });
    expect(attached.statusCode, attached.body).toBeLessThan(300);
    const row = await h.ctx.db.selectFrom('addons').select(['port', 'host']).where('name', '=', 'db').executeTakeFirstOrThrow();
    const [cluster] = kube.list('clusters', namespace);
    const base = cluster!.metadata.name;
    expect(row.host).toBe(`${base}.${namespace}.svc.cluster.local`);
    expect(kube.get('services', namespace, base)!.spec.ports[0]).toMatchObject({ port: row.port, targetPort: 5432 });
    // Ancla's `database` answer: where the attached service reaches it.
    const database = await api('GET', `/workspaces/${t.orgSlug}/projects/shop/envs/production/services/web/database`);
    expect(database.statusCode, database.body).toBe(200);
    expect(database.json()).toMatchObject({ host: row.host, port: row.port });

    const environment = await h.ctx.db
      .selectFrom('environments')
      .select('id')
      .where('project_id', '=', t.projectId)
      .where('slug', '=', 'production')
      .executeTakeFirstOrThrow();
    const policy = kube.get('networkpolicies', namespace, base)!;
    expect(policy.spec.podSelector).toEqual({ matchLabels: { 'slipway.dev/addon-id': cluster!.metadata.labels['slipway.dev/addon-id'] } });
    expect(policy.spec.ingress[0]).toEqual({
      from: [{ podSelector: { matchLabels: { 'slipway.dev/application-id': t.appId, 'slipway.dev/environment-id': environment.id } } }],
      ports: [{ protocol: 'TCP', port: 5432 }],
    });
    // The namespace's own policy no longer covers add-on pods (policies add up).
    expect(kube.get('networkpolicies', namespace, 'slipway-isolation')!.spec.podSelector).toEqual({
      matchExpressions: [{ key: 'slipway.dev/addon-id', operator: 'DoesNotExist' }],
    });

    const sql = await addons('POST', '/db/query', { sql: 'select 1' });
    expect(sql.statusCode).toBe(409);
    expect(sql.json().message).toMatch(/runs in the Kubernetes cluster/);

    const detached = await addons('DELETE', `/db/attachments/${attached.json().addon.attachments[0].id}`);
    expect(detached.statusCode, detached.body).toBeLessThan(300);
    expect(JSON.stringify(kube.get('networkpolicies', namespace, base)!.spec)).not.toContain(t.appId);
  });

  it('rotates, resizes, deletes (hibernated, kept) and undeletes through the cluster', async () => {
    const [set] = kube.list('statefulsets', namespace);
    const secretName = set!.spec.template.spec.containers[0].env[0].valueFrom.secretKeyRef.name;
    const before = kube.get('secrets', namespace, secretName)!.data.password;
    const annotation = set!.spec.template.metadata.annotations['slipway.dev/credentials'];
    expect((await addons('POST', '/cache/rotate')).statusCode).toBe(200);
    expect(kube.get('secrets', namespace, secretName)!.data.password).not.toBe(before);
    expect(kube.get('statefulsets', namespace, set!.metadata.name)!.spec.template.metadata.annotations['slipway.dev/credentials']).not.toBe(
      annotation,
    );

    expect((await addons('PATCH', '/db', { plan: 'standard' })).statusCode).toBe(200);
    const [cluster] = kube.list('clusters', namespace);
    expect(cluster!.spec).toMatchObject({ storage: { size: '10Gi' }, resources: { limits: { memory: '1024Mi' } } });
    await running('db');

    expect((await addons('DELETE', '/db')).statusCode).toBe(200);
    expect(kube.get('clusters', namespace, cluster!.metadata.name)!.metadata.annotations).toEqual({ 'cnpg.io/hibernation': 'on' });
    expect((await addons('POST', '/db/undelete')).statusCode).toBe(200);
    expect(kube.get('clusters', namespace, cluster!.metadata.name)!.metadata.annotations ?? {}).toEqual({});
    await running('db');
  });
});
