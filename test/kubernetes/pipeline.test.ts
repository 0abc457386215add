import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { INTERRUPTED_DETAIL } from '../../src/pipeline/deploy/deploy-runner.js';
import { MetricsSampler } from '../../src/modules/observability/metrics-sampler.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { FakeKubeApi } from '../helpers/fake-kube-api.js';
import { TestRepo } from '../helpers/git-repo.js';
import { waitFor } from '../helpers/wait.js';
import { buildAndWait, createApp, setConfig, type TestApp } from '../pipeline-build/fixtures.js';
import { settled } from '../pipeline-deploy/fixtures.js';
import { buildBusyboxBase, BASE_IMAGE, makeImageLayout } from '../registry/base-image.js';
import { freePort, missingBinary, run, startRegistry, startRegistryFor, type RegistryServer } from '../registry/registry-server.js';

const missing = missingBinary({
  buildah: 'buildah',
  'docker-registry': 'docker-registry',
  skopeo: 'skopeo',
  busybox: 'busybox-static',
  git: 'git',
});
if (missing) console.warn(`[test/kubernetes] skipping the pipeline-on-Kubernetes test: ${missing}`);

const SERVICE = 'slipway-registry';
const SECRET = `tok-${randomBytes(12).toString('hex')}`;
const GREETING = `hello-${randomBytes(4).toString('hex')}`;
const DOCKERFILE = `FROM ${BASE_IMAGE}
RUN mkdir -p /www && echo "hello from an image" > /www/index.html
WORKDIR /www
CMD httpd -f -p $PORT -h /www
`;
const PROCFILE = 'web: httpd -f -p $PORT -h /www\nworker: sleep 100000\nrelease: echo migrating\n';

let h: Harness;
let kube: FakeKubeApi;
let registry: RegistryServer;
/** Another registry the operator allows (IMAGE_PULL_REGISTRIES), where a member's CI pushed an image. */
let allowed: RegistryServer;
let repo: TestRepo;
let t: TestApp;
let kubeconfig: string;

const decode = (data: Record<string, string>) =>
  Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]));
const secretValues = (o: { data?: Record<string, string>; stringData?: Record<string, string>; metadata: object }) => ({
  ...decode(o.data ?? {}),
  ...(o.stringData ?? {}),
});
const api = async (method: 'GET' | 'POST', url: string, payload?: unknown) => {
  const r = await h.app.inject({ method, url: `/v1${url}`, headers: t.user.headers, ...(payload ? { payload: payload as object } : {}) });
  return { status: r.statusCode, body: r.json() };
};

beforeAll(async () => {
  if (missing) return;
  kube = await FakeKubeApi.start();
  const registryPort = await freePort();
  const allowedPort = await freePort();
  kubeconfig = join(tmpdir(), `slipway-kubeconfig-${randomBytes(4).toString('hex')}.json`);
  writeFileSync(kubeconfig, kube.kubeConfig().exportConfig());
  h = await createHarness(
    {
      RUNTIME: 'kubernetes',
      KUBECONFIG: kubeconfig,
      KUBERNETES_NAMESPACE_PREFIX: 'apps-',
      REGISTRY_URL: `http://127.0.0.1:${registryPort}`,
      REGISTRY_SERVICE: SERVICE,
      IMAGE_PULL_REGISTRIES: `http://127.0.0.1:${allowedPort}`,
    },
    { jobs: true, runtime: true },
  );
  registry = await startRegistryFor(h, { service: SERVICE, port: registryPort });
  // Another operator's registry in all but name: its token service is this platform's, so an API key is a credential there.
  const address = h.app.server.address() as { port: number };
  allowed = await startRegistry({
    realm: `http://127.0.0.1:${address.port}/v1/integrations/docker/auth`,
    service: SERVICE,
    issuer: 'slipway',
    rootCertBundle: (await h.app.inject({ method: 'GET', url: '/v1/integrations/signing-cert' })).json().certificate,
    port: allowedPort,
  });
  await buildBusyboxBase(join(h.dataDir, 'containers'));
  repo = new TestRepo();
  repo.commit({ Dockerfile: DOCKERFILE, Procfile: PROCFILE });
  t = await createApp(h, {
    github_repository: repo.dir,
    auto_deploy_branch: 'main',
    deployment_timeout: 20,
    health_check_host: 'health.internal',
  });
  await setConfig(h, t, 'GREETING', GREETING);
  await setConfig(h, t, 'API_TOKEN', SECRET, { secret: true });
  // The fake cluster "runs" the release Job: its output shows the secret, which the log must scrub.
  kube.jobBehaviour = () => ({ outcome: 'succeed', logs: [`migrating with ${SECRET}`] });
}, 120_000);

afterAll(async () => {
  await h?.close();
  await kube?.stop();
  await registry?.stop();
  await allowed?.stop();
  repo?.remove();
  if (kubeconfig) rmSync(kubeconfig, { force: true });
});

describe.skipIf(!!missing)('the pipeline with RUNTIME=kubernetes (fake API server, real registry)', () => {
  let namespace: string;
  let firstDeployment: string;

  it('builds and pushes, then deploys through the HTTP API: records as with the local runtime', async () => {
    const { detail, log } = await buildAndWait(h, t);
    expect(detail.built, log.log_text.slice(-1500)).toBe(true);
    const chain = await api('POST', `/applications/${t.appId}/deploy`);
    expect(chain.status, JSON.stringify(chain.body)).toBe(202);
    const deployment = await waitFor(
      "the chain's deployment",
      async () => (await api('GET', `/applications/${t.appId}/deployments`)).body.items?.[0],
      60_000,
    );
    const d = await settled(h, t.user, deployment.id, 60_000);
    firstDeployment = d.id;
    expect(d.status, d.deploy_log).toBe('complete');
    expect(d).toMatchObject({ complete: true, error: false, error_detail: null });
    expect(d.deploy_step).toEqual({ steps: ['Setup', 'Release', 'Deploy', 'Rollout', 'Done'], current: 4 });
    for (const step of ['Setup:', 'Release:', 'Deploy:', 'Rollout:', 'Done:']) expect(d.deploy_log).toContain(step);
    expect(d.deploy_log).toContain('release | migrating with **secret**');
    expect(d.deploy_log).not.toContain(SECRET);
    expect(d.deploy_metadata).toMatchObject({ runtime: 'kubernetes', release_version: 1, process_counts: { web: 1, worker: 0 } });

    // What reached the cluster: a namespace per organization, server-side applied by `slipway`.
    namespace = `apps-${t.orgSlug}`;
    expect(kube.get('namespaces', undefined, namespace)).toBeDefined();
    // Isolation (issue 10): the namespace enforces the restricted Pod Security Standard, and the
    // fake's Pod Security admission let the web pod and the release Job's pod in.
    expect(kube.get('namespaces', undefined, namespace)!.metadata.labels).toMatchObject({
      'pod-security.kubernetes.io/enforce': 'restricted',
    });
    expect(kube.get('networkpolicies', namespace, 'slipway-isolation')).toBeDefined();
    const admitted = kube.list('pods', namespace);
    expect(admitted.filter((p) => p.metadata.labels['slipway.dev/process-type'] === 'web' && p.status.phase === 'Running')).toHaveLength(1);
    expect(admitted.filter((p) => p.metadata.labels['slipway.dev/component'] === 'one-off')).toHaveLength(1);
    expect(kube.list('events', namespace).filter((e) => e.reason === 'FailedCreate')).toEqual([]);
    const applies = kube.applies();
    expect(applies.length).toBeGreaterThan(0);
    for (const r of applies) expect(r.query.fieldManager).toBe('slipway');
    const deployments = kube.list('deployments', namespace);
    expect(deployments.map((x) => x.metadata.labels['slipway.dev/process-type']).sort()).toEqual(['web', 'worker']);
    const web = deployments.find((x) => x.metadata.labels['slipway.dev/process-type'] === 'web')!;
    expect(web.spec.replicas).toBe(1);
    const container = web.spec.template.spec.containers[0];
    expect(container.image).toBe(`${registry.host}/${detail.repository_name}@${detail.image_metadata.manifest_digest}`);
    expect(container.resources).toEqual({ requests: { cpu: '500m', memory: '1024Mi' }, limits: { cpu: '1000m', memory: '1536Mi' } });
    expect(container.readinessProbe.httpGet).toMatchObject({ path: '/', httpHeaders: [{ name: 'Host', value: 'health.internal' }] });
    expect(kube.list('services', namespace)).toHaveLength(1);
    // Configuration only through a Secret: no value in any Deployment or Job spec.
    const specs = JSON.stringify([...deployments, ...kube.list('jobs', namespace)]);
    expect(specs).not.toContain(SECRET);
    expect(specs).not.toContain(GREETING);
    const config = kube.list('secrets', namespace).find((s) => s.type !== 'kubernetes.io/dockerconfigjson')!;
    expect(secretValues(config)).toMatchObject({ API_TOKEN: SECRET, GREETING });

    // The image pull secret is a credential of our own token service: it pulls this image, nothing more.
    const pull = kube.list('secrets', namespace).find((s) => s.type === 'kubernetes.io/dockerconfigjson')!;
    expect(web.spec.template.spec.imagePullSecrets).toEqual([{ name: pull.metadata.name }]);
    const auth = JSON.parse(secretValues(pull)['.dockerconfigjson']!).auths[registry.host];
    const ref = `docker://${detail.image_metadata.registry_reference}`;
    const inspected = await run('skopeo', [
      '--insecure-policy',
      'inspect',
      '--tls-verify=false',
      '--creds',
      `${auth.username}:${auth.password}`,
      ref,
    ]);
    expect(JSON.parse(inspected.stdout).Digest).toBe(detail.image_metadata.manifest_digest);

    // The pipeline status reads the same records.
    const pipeline = await api('GET', `/applications/${t.appId}/pipeline-status`);
    expect(pipeline.status).toBe(200);
    expect(pipeline.body.deploy).toMatchObject({
      id: d.id,
      status: 'complete',
      step: { steps: ['Setup', 'Release', 'Deploy', 'Rollout', 'Done'], current: 4 },
    });
    expect(JSON.stringify(pipeline.body)).not.toContain(SECRET);
  }, 180_000);

  it('scales by patching replicas, and observability reads pod metrics and restarts', async () => {
    const before = kube.list('deployments', namespace).find((x) => x.metadata.labels['slipway.dev/process-type'] === 'web')!;
    const generationBefore = before.metadata.generation;
    const scaled = await api('POST', `/applications/${t.appId}/scale`, { process_counts: { web: 3 } });
    expect(scaled.status, JSON.stringify(scaled.body)).toBe(200);
    await waitFor('3 web replicas', async () => kube.get('deployments', namespace, before.metadata.name)?.spec.replicas === 3, 20_000);
    const patches = kube.requests.filter((r) => r.method === 'PATCH' && r.path.endsWith(`/deployments/${before.metadata.name}/scale`));
    expect(patches.length).toBe(1);
    const after = kube.get('deployments', namespace, before.metadata.name)!;
    expect(after.spec.template).toEqual(before.spec.template);
    expect(after.metadata.generation).toBe(generationBefore + 1);

    await waitFor(
      '3 running web pods',
      async () =>
        kube.list('pods', namespace).filter((p) => p.status?.phase === 'Running' && p.metadata.labels['slipway.dev/process-type'] === 'web')
          .length === 3,
      20_000,
    );
    kube.podMetrics = () => ({ cpu: '25m', memory: '64Mi' });
    // Two workers sampling the same cluster in the same minute record one row, not two.
    const minute = Math.floor(Date.now() / 60_000) * 60_000;
    await new MetricsSampler(h.ctx.db, h.ctx.runtime!, 60, console).sampleOnce(new Date(minute + 1_000));
    await new MetricsSampler(h.ctx.db, h.ctx.runtime!, 60, console).sampleOnce(new Date(minute + 2_000));
    const rows = await h.ctx.db.selectFrom('metric_samples').select(['sampled_at']).where('application_id', '=', t.appId).execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]!.sampled_at.getTime() % 60_000).toBe(0);
    const obs = await api('GET', `/applications/${t.appId}/observability?range=1h`);
    expect(obs.status).toBe(200);
    const sample = JSON.stringify(obs.body);
    expect(sample).toContain('"pod_count":3');
    expect(sample).toContain(`"memory_usage_bytes":${3 * 64 * 1024 * 1024}`);
  }, 60_000);

  it('fails a crash-looping release with the reason and rolls the cluster back to the serving deployment', async () => {
    kube.deploymentBehaviour = (dep) =>
      dep.metadata.annotations?.['slipway.dev/deployment-id'] === firstDeployment ? 'ready' : 'crash-loop';
    const releases = await api('GET', `/releases/${t.appId}`);
    const release = releases.body.items[0];
    const queued = await api('POST', `/releases/${release.id}/deploy`);
    expect(queued.status, JSON.stringify(queued.body)).toBe(202);
    const id = queued.body.deployment_id ?? queued.body.id;
    const d = await settled(h, t.user, id, 60_000);
    expect(d).toMatchObject({ status: 'error', complete: false, error: true });
    expect(d.error_detail).toMatch(/crash loop/);
    // The same structured failure as the local runtime's: the exit, the last lines, the hint.
    expect(d.failure).toMatchObject({
      reason: 'crashed_during_start',
      exit: { code: 1, description: 'exit code 1' },
      output: ['node:internal/modules/cjs/loader:1080', "Error: Cannot find module 'express'"],
    });
    expect(d.failure.hint).toMatch(/a dependency is missing \(express\)/);
    expect(d.error_detail).toMatch(/Hint: a dependency is missing \(express\)/);
    expect(d.deploy_log).toContain("  | Error: Cannot find module 'express'");
    expect(d.deploy_step.current).toBe(3);
    // Back to the deployment that was serving, with the current counts.
    const web = kube.list('deployments', namespace).find((x) => x.metadata.labels['slipway.dev/process-type'] === 'web')!;
    expect(web.metadata.annotations['slipway.dev/deployment-id']).toBe(firstDeployment);
    expect(web.spec.replicas).toBe(3);
    const latest = (await api('GET', `/applications/${t.appId}/detail`)).body;
    expect(JSON.stringify(latest)).not.toContain(SECRET);
  }, 90_000);

  it('deploys an image from another registry the operator allows: pods pull it by digest with the credentials the deploy gave', async () => {
    kube.deploymentBehaviour = () => 'ready';
    const scratch = join(h.dataDir, 'pushed-image');
    const layout = await makeImageLayout(scratch);
    const repository = `${t.orgSlug}/shop/web`;
    await run('skopeo', [
      '--insecure-policy',
      'copy',
      '--dest-tls-verify=false',
      '--dest-creds',
      `ci:${t.user.apiKey}`,
      `oci:${layout}:v1`,
      `docker://${allowed.host}/${repository}:v1`,
    ]);
    const before = new Set((await api('GET', `/applications/${t.appId}/deployments`)).body.items.map((x: { id: string }) => x.id));
    const deployed = await api('POST', `/applications/${t.appId}/deploy`, {
      image: `${allowed.host}/${repository}:v1`,
      credentials: { username: 'ci', password: t.user.apiKey },
    });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(202);
    // The image is pulled and unpacked (the build stage), then released and deployed.
    const deployment = await waitFor(
      "the image's deployment",
      async () => (await api('GET', `/applications/${t.appId}/deployments`)).body.items.find((x: { id: string }) => !before.has(x.id)),
      60_000,
    );
    const d = await settled(h, t.user, deployment.id, 60_000);
    expect(d.status, d.deploy_log).toBe('complete');
    expect(d.deploy_log).not.toContain(t.user.apiKey);

    const digest = String(deployed.body.image).split('@')[1];
    const web = kube.list('deployments', namespace).find((x) => x.metadata.labels['slipway.dev/process-type'] === 'web')!;
    expect(web.spec.template.spec.containers[0].image).toBe(`${allowed.host}/${repository}@${digest}`);
    // Its pull secret holds the deploy's credentials for that registry only, and they do pull the image.
    const pull = kube.list('secrets', namespace).find((s) => s.type === 'kubernetes.io/dockerconfigjson')!;
    expect(web.spec.template.spec.imagePullSecrets).toEqual([{ name: pull.metadata.name }]);
    const auths = JSON.parse(secretValues(pull)['.dockerconfigjson']!).auths;
    expect(Object.keys(auths)).toEqual([allowed.host]);
    expect(auths[allowed.host]).toMatchObject({ username: 'ci', password: t.user.apiKey });
    const inspected = await run('skopeo', [
      '--insecure-policy',
      'inspect',
      '--tls-verify=false',
      '--creds',
      `${auths[allowed.host].username}:${auths[allowed.host].password}`,
      `docker://${allowed.host}/${repository}@${digest}`,
    ]);
    expect(JSON.parse(inspected.stdout).Digest).toBe(digest);
    rmSync(scratch, { recursive: true, force: true });
  }, 120_000);

  it('a worker stopping mid-rollout records the interruption and queues the roll back for any live worker', async () => {
    kube.deploymentBehaviour = (dep) =>
      dep.metadata.annotations?.['slipway.dev/deployment-id'] === firstDeployment ? 'ready' : 'never-ready';
    const release = (await api('GET', `/releases/${t.appId}`)).body.items[0];
    const queued = await api('POST', `/releases/${release.id}/deploy`);
    expect(queued.status).toBe(202);
    const id = queued.body.deployment_id;
    await waitFor('the Rollout step', async () => (await api('GET', `/deployments/${id}/detail`)).body.deploy_step?.current === 3, 20_000);

    await h.ctx.jobs!.stop(); // this worker goes away mid-rollout; the cluster still has the new release applied
    const d = (await api('GET', `/deployments/${id}/detail`)).body;
    expect(d).toMatchObject({ status: 'error', error: true, error_detail: INTERRUPTED_DETAIL });
    const { rows } = await sql<{
      data: Record<string, unknown>;
    }>`SELECT data FROM pipeline_jobs WHERE state = 'created'`.execute(h.ctx.db);
    expect(rows.map((r) => r.data)).toContainEqual(
      expect.objectContaining({ kind: 'reconcile', applicationId: t.appId, environmentId: d.environment_id }),
    );
  }, 60_000);
});
