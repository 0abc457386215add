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
import { WebSocket } from 'ws';
import { workloadManifests } from '../../src/platform/runtime/kubernetes/manifests.js';
import { createApp, type TestApp } from '../pipeline-build/fixtures.js';
import { slipway } from '../cli/slipway.js';
import { makePlan } from './plan-fixture.js';

let h: Harness;
let kube: FakeKubeApi;
let kubeconfig: string;
let t: TestApp;
let namespace: string;
let server: string;

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

const production = () =>
  h.ctx.db
    .selectFrom('environments')
    .select('id')
    .where('project_id', '=', t.projectId)
    .where('slug', '=', 'production')
    .executeTakeFirstOrThrow();

/** Opens an exec session through the API and attaches it: what came out on each stream, and the exit message. */
async function execSession(body: object, act: (ws: WebSocket) => void = () => {}, query = '', instance = '') {
  const opened = await api('POST', `/applications/${t.appId}${instance ? `/instances/${instance}` : ''}/exec`, body);
  expect(opened.statusCode, opened.body).toBe(201);
  const ws = new WebSocket(`${server.replace('http', 'ws')}${opened.json().stream_path}${query}`, {
    headers: { 'x-api-key': t.user.apiKey },
  });
  const out = { stdout: '', stderr: '', exit: null as null | { exit_code: number | null }, session: opened.json() };
  await new Promise<void>((resolve, reject) => {
    ws.on('open', () => act(ws));
    ws.on('message', (data, isBinary) => {
      const bytes = data as Buffer;
      if (!isBinary) out.exit = JSON.parse(bytes.toString('utf8'));
      else if (bytes[0] === 1) out.stdout += bytes.subarray(1).toString();
      else if (bytes[0] === 2) out.stderr += bytes.subarray(1).toString();
    });
    ws.on('close', () => resolve());
    ws.on('error', reject);
  });
  return out;
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
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  server = `http://127.0.0.1:${(h.app.server.address() as { port: number }).port}`;
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

    const environment = await production();
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
    // No BACKUP_S3_* here: backups, restores and drills say which settings they need, and change nothing.
    for (const [path, body] of [
      ['/db/backups'],
      ['/db/drills'],
      ['/db/restore', { name: 'copy', time: new Date().toISOString() }],
    ] as const) {
      const refused = await addons('POST', path, body);
      expect(refused.statusCode, refused.body).toBe(409);
      expect(refused.json().message).toMatch(/need an object store: set BACKUP_S3_ENDPOINT, BACKUP_S3_BUCKET/);
    }
    expect((await addons('GET', '/db/backups')).json().backups).toEqual([]);

    // A cluster refusing the detach's policy update: the old policy still admits the app, so it is
    // marked on the add-on and applied again until it lands.
    kube.forbidden = (access) => access.resource === 'networkpolicies' && access.verb !== 'get';
    try {
      const detached = await addons('DELETE', `/db/attachments/${attached.json().addon.attachments[0].id}`);
      expect(detached.statusCode, detached.body).toBeLessThan(300);
      expect((await addons('GET', '/db')).json().status_detail).toMatch(/^NetworkPolicy not applied .*retried until it is.*403/);
      expect(JSON.stringify(kube.get('networkpolicies', namespace, base)!.spec)).toContain(t.appId);
    } finally {
      kube.forbidden = () => false;
    }
    await waitFor(
      'the retried policy',
      () => !JSON.stringify(kube.get('networkpolicies', namespace, base)!.spec).includes(t.appId),
      20_000,
      50,
    );
    await waitFor('the mark cleared', async () => (await addons('GET', '/db')).json().status_detail === null, 5_000, 50);
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

    // A cluster that refuses (RBAC without CloudNativePG's kinds): the add-on says why, in one line.
    kube.forbidden = (access) => access.group === 'postgresql.cnpg.io';
    try {
      const refused = await addons('POST', '', { name: 'refused', kind: 'postgres' });
      expect(refused.statusCode, refused.body).toBe(201);
      expect(refused.json()).toMatchObject({ status: 'failed', status_detail: expect.stringContaining('HTTP 403 Forbidden') });
      expect(refused.json().status_detail).not.toMatch(/\n|authorization/i);
    } finally {
      kube.forbidden = () => false;
    }
  });
});

describe('slipway exec on Kubernetes (issue 33)', () => {
  let web: string;

  beforeAll(async () => {
    // The app's pods as a deployment leaves them: its Deployments (the driver's own manifests) in the fake cluster.
    const environment = await production();
    const plan = makePlan({
      orgSlug: t.orgSlug,
      projectSlug: 'shop',
      appSlug: 'web',
      applicationId: t.appId,
      environmentId: environment.id,
      formation: { web: 1, worker: 1 },
    });
    const manifests = workloadManifests(plan, { namespacePrefix: 'apps-', ingressClass: null, hasPullSecret: false });
    for (const d of manifests.deployments) kube.seed('deployments', d.manifest as never, 'slipway');
    const appPods = () => kube.list('pods', namespace).filter((p) => p.metadata.labels?.['slipway.dev/application-id'] === t.appId);
    await waitFor('the web and worker pods running', () => appPods().filter((p) => p.status?.phase === 'Running').length === 2, 20_000, 50);
    web = appPods().find((p) => p.metadata.labels['slipway.dev/process-type'] === 'web')!.metadata.name;
  }, 30_000);

  it('`slipway exec -- CMD` runs in the web pod through the exec subresource (v5): its output, its input to the end, its exit code, recorded', async () => {
    const env = { HOME: tmpdir(), SLIPWAY_SERVER: server, SLIPWAY_API_KEY: t.user.apiKey };
    const r = await slipway(
      ['exec', '-a', `${t.orgSlug}/shop/web`, '--', 'sh', '-c', 'echo "in=$HOSTNAME"; echo to-stderr >&2; exit 3'],
      env,
    );
    expect(r.code, r.stderr).toBe(3);
    expect(r.stdout).toContain(`in=${web}`);
    expect(r.stderr).toContain('to-stderr');
    const first = kube.execs[0]!;
    expect(first).toMatchObject({ namespace, pod: web, tty: false, stdin: true, protocol: 'v5.channel.k8s.io' });
    expect(first.command.slice(0, 2)).toEqual(['/bin/sh', '-c']);

    // Standard input to its end (v5 closes channel 0), 200 kB through.
    const counted = await execSession({ command: 'wc -c' }, (ws) => {
      // In messages of at most 64 KiB, as the CLI cuts a paste.
      for (let i = 0; i < 4; i++) ws.send(Buffer.concat([Buffer.from([0]), Buffer.alloc(50_000, 'x')]), { binary: true });
      ws.send(Buffer.from([4]), { binary: true });
    });
    expect(counted.stdout.trim()).toBe('200000');
    expect(counted.exit).toMatchObject({ exit_code: 0 });

    // A named instance: the worker's pod.
    const worker = await execSession({ command: 'echo "$HOSTNAME"' }, () => {}, '', 'worker.1');
    expect(worker.session.instance).toBe('worker.1');
    expect(worker.stdout.trim()).toMatch(/-worker-/);

    const session = await h.ctx.db.selectFrom('exec_sessions').selectAll().where('exit_code', '=', 3).executeTakeFirstOrThrow();
    expect(session).toMatchObject({
      application_id: t.appId,
      instance_name: 'web.1',
      tty: false,
      command: expect.stringContaining('exit 3'),
    });
    expect(session.finished_at).not.toBeNull();
    // Refusals sit above the runtime: another user's application, an instance that does not run.
    const stranger = await h.user();
    expect(
      (
        await h.app.inject({
          method: 'POST',
          url: `/v1/applications/${t.appId}/exec`,
          headers: stranger.headers,
          payload: { command: 'true' },
        })
      ).statusCode,
    ).toBe(403);
    expect((await api('POST', `/applications/${t.appId}/instances/web.7/exec`, { command: 'true' })).statusCode).toBe(404);
  });

  it('gives a command a terminal sized by the resize channel, and passes later resizes; v4 works without closing stdin', async () => {
    const tty = await execSession(
      { command: 'stty size; read line; echo "got $line"', tty: true },
      (ws) => {
        ws.send(JSON.stringify({ type: 'resize', rows: 40, cols: 120 }));
        ws.send(Buffer.concat([Buffer.from([0]), Buffer.from('hello\n')]), { binary: true });
      },
      '?rows=30&cols=100',
    );
    expect(tty.stdout).toContain('30 100');
    expect(tty.stdout).toContain('got hello');
    expect(tty.exit).toMatchObject({ exit_code: 0 });
    const record = kube.execs.find((e) => e.tty)!;
    expect(record.resizes.slice(0, 2)).toEqual([
      { Width: 100, Height: 30 },
      { Width: 120, Height: 40 },
    ]);

    kube.execProtocols = ['v4.channel.k8s.io'];
    try {
      const v4 = await execSession({ command: 'echo v4; exit 5' });
      expect(v4.stdout.trim()).toBe('v4');
      expect(v4.exit).toMatchObject({ exit_code: 5 });
      expect(kube.execs.at(-1)!.protocol).toBe('v4.channel.k8s.io');
    } finally {
      kube.execProtocols = ['v5.channel.k8s.io', 'v4.channel.k8s.io'];
    }
  });
});
