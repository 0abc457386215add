import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { backgroundFailureCounts } from '../../src/platform/observability/background-failures.js';
import { RolloutFailure, type RolloutLog, type WorkloadPlan } from '../../src/platform/runtime/application-runtime.js';
import { KubernetesRuntime } from '../../src/platform/runtime/kubernetes/kubernetes-runtime.js';
import { ANNOTATION, LABEL, workloadNames } from '../../src/platform/runtime/kubernetes/names.js';
import { cpuMillicores, memoryBytes } from '../../src/platform/runtime/kubernetes/usage.js';
import { FakeKubeApi } from '../helpers/fake-kube-api.js';
import { waitFor } from '../helpers/wait.js';
import { SECRET_VALUE, makePlan, nextPlan, resourcesOf } from './plan-fixture.js';

const DOCKER_CONFIG = '{"auths":{"registry.example.test":{"auth":"dG9rZW46c2VjcmV0"}}}';

function recordingLog() {
  const steps: Array<[string, string]> = [];
  const lines: string[] = [];
  const log: RolloutLog = {
    step: async (name, message) => {
      steps.push([name, message]);
    },
    line: (text) => {
      lines.push(text);
    },
  };
  return { log, steps, lines };
}

const target = (plan: WorkloadPlan) => ({ applicationId: plan.application.id, environmentId: plan.environment.id });
const never = new AbortController().signal;
const byType = (type: string) => (d: { metadata: Record<string, any> }) => d.metadata.labels?.[LABEL.processType] === type;

let kube: FakeKubeApi;
let runtime: KubernetesRuntime;
const warnings: string[] = [];

function makeRuntime(k: FakeKubeApi, ingressClass: string | null = 'nginx') {
  return new KubernetesRuntime({
    kubeConfig: k.kubeConfig(),
    namespacePrefix: 'slipway-',
    ingressClass,
    pullSecret: async () => DOCKER_CONFIG,
    pollIntervalMs: 100,
    logger: { info: () => undefined, warn: (_obj: object, m?: string) => warnings.push(m ?? ''), error: () => undefined },
  });
}

/** prepare + rollout of a plan; returns the result and the log. */
async function deploy(plan: WorkloadPlan, timeoutMs = 5000) {
  const rec = recordingLog();
  await runtime.prepare(plan, (line) => rec.lines.push(line));
  const result = await runtime.rollout(plan, rec.log, Date.now() + timeoutMs, never);
  return { result, ...rec };
}

beforeEach(async () => {
  kube = await FakeKubeApi.start();
  runtime = makeRuntime(kube);
  warnings.length = 0;
  await runtime.start();
});

afterEach(async () => {
  await runtime.shutdown();
  await kube.stop();
});

describe('KubernetesRuntime against a fake API server', () => {
  it('start() names the API server it cannot reach', async () => {
    const gone = await FakeKubeApi.start();
    const url = gone.url;
    const unreachable = makeRuntime(gone);
    await gone.stop();
    await expect(unreachable.start()).rejects.toThrow(`Kubernetes API server ${url} is not reachable`);
  });

  it('rolls out: applies Namespace, Secrets, Deployments, Service and Ingress server-side, logs steps, waits for ready pods', async () => {
    const plan = makePlan({ formation: { web: 2, worker: 1 } });
    const started = Date.now();
    const { result, steps, lines } = await deploy(plan);
    const names = workloadNames(plan, 'slipway-');

    const applied = kube.applies().map((r) => `${(r.body as any).kind}/${(r.body as any).metadata.name}`);
    expect(applied).toEqual(
      expect.arrayContaining([
        `Namespace/${names.namespace}`,
        `Secret/${names.configSecret(1)}`,
        `Secret/${names.pullSecret}`,
        `Deployment/${names.deployment('web')}`,
        `Deployment/${names.deployment('worker')}`,
        `Service/${names.service}`,
        `Ingress/${names.ingress}`,
      ]),
    );
    for (const r of kube.applies()) expect(r.query).toMatchObject({ fieldManager: 'slipway', force: 'true' });
    // Nothing was written any other way.
    expect(
      kube.requests.filter((r) => ['PATCH', 'POST', 'PUT'].includes(r.method) && r.contentType !== 'application/apply-patch+yaml'),
    ).toEqual([]);

    expect(steps.map(([name]) => name)).toEqual(['Deploy', 'Rollout']);
    expect(lines).toContain('Rollout: web 2/2 ready');
    expect(lines).toContain('Rollout: worker 1/1 ready');
    expect(result.url).toBe(`http://${plan.hostname}`);
    expect(result.instances).toHaveLength(3);
    expect(result.instances.filter((i) => i.process_type === 'web')).toHaveLength(2);
    expect(Date.now() - started).toBeLessThan(4000);

    // The configuration lives in the Secret only; the managed field record names slipway.
    const secret = kube.get('secrets', names.namespace, names.configSecret(1))!;
    expect(Buffer.from(secret.data.PASSWORD, 'base64').toString()).toBe(SECRET_VALUE);
    expect(secret.metadata.managedFields[0].manager).toBe('slipway');
    for (const d of kube.list('deployments', names.namespace)) expect(JSON.stringify(d)).not.toContain(SECRET_VALUE);
    const pull = kube.get('secrets', names.namespace, names.pullSecret)!;
    expect(pull.type).toBe('kubernetes.io/dockerconfigjson');
    expect(kube.get('deployments', names.namespace, names.deployment('web'))!.spec.template.spec.imagePullSecrets).toEqual([
      { name: names.pullSecret },
    ]);
  });

  it('keeps rolling out by polling when watches end early, and without an ingress class answers the Service URL', async () => {
    await runtime.shutdown();
    await kube.stop();
    kube = await FakeKubeApi.start({ closeWatchesAfterMs: 30 });
    runtime = makeRuntime(kube, null);
    const plan = makePlan({ formation: { web: 1 } });
    const { result } = await deploy(plan);
    const names = workloadNames(plan, 'slipway-');
    expect(result.url).toBe(`http://${names.service}.${names.namespace}.svc.cluster.local`);
    expect(kube.applies('Ingress')).toEqual([]);
  });

  it('times out with the failed probe read from events, and the previous pods keep serving', async () => {
    const first = makePlan({ formation: { web: 1 } });
    await deploy(first);
    kube.deploymentBehaviour = () => 'never-ready';
    const second = nextPlan(first, { timeoutSeconds: 1 });
    const started = Date.now();
    await expect(deploy(second, 1000)).rejects.toThrow(
      new RolloutFailure(
        'Deployment timed out after 1s: web: failed probe: Readiness probe failed: HTTP probe failed with statuscode: 500',
        'deploy_timeout',
      ),
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    const pods = kube.list('pods').filter(byType('web'));
    expect(pods.some((p) => p.metadata.annotations[ANNOTATION.deploymentId] === first.deploymentId && p.status.phase === 'Running')).toBe(
      true,
    );
  });

  it('fails fast on a crash loop with the restart count and last exit code', async () => {
    kube.deploymentBehaviour = (d) => (d.metadata.labels[LABEL.processType] === 'worker' ? 'crash-loop' : 'ready');
    const started = Date.now();
    const error = await deploy(makePlan({ timeoutSeconds: 30 }), 30_000).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RolloutFailure);
    expect((error as Error).message).toMatch(
      /^Deployment failed: worker: crash loop: worker restarted \d+ times \(last exit code 1\)\. Hint: a dependency is missing \(express\)/,
    );
    // The structured failure: the last run's exit and what it printed (its previous log).
    expect((error as RolloutFailure).diagnosis).toMatchObject({
      reason: 'crashed_during_start',
      instance: 'worker.1',
      exit: { code: 1 },
      port: null,
      output: ['node:internal/modules/cjs/loader:1080', "Error: Cannot find module 'express'"],
    });
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('fails fast on an image pull error with the kubelet message', async () => {
    kube.deploymentBehaviour = () => 'image-pull-error';
    const plan = makePlan({ timeoutSeconds: 30 });
    const error = await deploy(plan, 30_000).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RolloutFailure);
    expect((error as Error).message).toMatch(
      /^Deployment failed: (web|worker): image pull error: (failed to pull and unpack image|Back-off pulling image) "registry\.example\.test\/acme\/shop\/api@sha256:a+"/,
    );
  });

  it('runs the release process as a Job: a failure gives its exit code and its log lines, scrubbed', async () => {
    kube.jobBehaviour = () => ({
      outcome: 'fail',
      exitCode: 3,
      logs: ['Running migrations', `connecting to postgres://app:${SECRET_VALUE}@db/app`, 'relation "users" already exists'],
    });
    const plan = makePlan();
    await runtime.prepare(plan, () => undefined);
    const output: string[] = [];
    const result = await runtime.runOnce(plan, 'release', { deadline: Date.now() + 5000, signal: never, onOutput: (l) => output.push(l) });
    expect(result).toEqual({ exitCode: 3, signal: null, timedOut: false });
    expect(output).toEqual(['Running migrations', 'connecting to **secret**', 'relation "users" already exists']);
    const job = kube.list('jobs')[0]!;
    expect(job.spec).toMatchObject({ backoffLimit: 0 });
    expect(job.spec.template.spec.restartPolicy).toBe('Never');
    expect(JSON.stringify(job)).not.toContain(SECRET_VALUE);
  });

  it("streams a one-off's output while it runs, each line once", async () => {
    const plan = makePlan();
    await runtime.prepare(plan, () => undefined);
    kube.jobBehaviour = () => ({ outcome: 'hang', logs: [`migrating table 1 of 40 as ${SECRET_VALUE}`] });
    const started = Date.now();
    const output: Array<{ line: string; at: number }> = [];
    const result = await runtime.runOnce(plan, 'release', {
      deadline: started + 2000,
      signal: never,
      onOutput: (line) => output.push({ line, at: Date.now() - started }),
    });
    expect(result.timedOut).toBe(true);
    expect(output.map((o) => o.line)).toEqual(['migrating table 1 of 40 as **secret**']);
    // Read from the follow stream long before the one-off ended at its deadline.
    expect(output[0]!.at).toBeLessThan(1500);
    expect(kube.requests.some((r) => r.path.endsWith('/log') && r.query.follow === 'true')).toBe(true);
  });

  it('a succeeding Job exits 0; a Job past its deadline is deleted and reported as timed out', async () => {
    const plan = makePlan();
    await runtime.prepare(plan, () => undefined);
    kube.jobBehaviour = () => ({ outcome: 'succeed', logs: ['warmed 12 caches'] });
    const output: string[] = [];
    expect(
      await runtime.runOnce(plan, 'postdeploy', { deadline: Date.now() + 5000, signal: never, onOutput: (l) => output.push(l) }),
    ).toEqual({ exitCode: 0, signal: null, timedOut: false });
    expect(output).toEqual(['warmed 12 caches']);

    kube.jobBehaviour = () => ({ outcome: 'hang' });
    const result = await runtime.runOnce(plan, 'release', { deadline: Date.now() + 800, signal: never, onOutput: () => undefined });
    expect(result).toEqual({ exitCode: null, signal: null, timedOut: true });
    const names = workloadNames(plan, 'slipway-');
    expect(kube.get('jobs', names.namespace, names.job('release', plan.deploymentId))).toBeUndefined();
  });

  it("a one-off run of a process type with a volume mounts its claim, on the node of the type's running instance (ReadWriteOnce)", async () => {
    const volume = { id: '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b', name: 'uploads', processType: 'web', mountPath: '/data', sizeMiB: 64 };
    const plan: WorkloadPlan = { ...makePlan({ formation: { web: 1 } }), volumes: [volume] };
    expect((await deploy(plan)).result.instances).toHaveLength(1);
    const names = workloadNames(plan, 'slipway-');
    const [instance] = kube.list('pods', names.namespace).filter(byType('web'));
    const run = { ...plan, deploymentId: '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a99' };
    expect(await runtime.runOnce(run, 'web', { deadline: Date.now() + 5000, signal: never, onOutput: () => undefined })).toMatchObject({
      exitCode: 0,
    });
    const job = kube.get('jobs', names.namespace, names.job('web', run.deploymentId))!;
    const pod = job.spec.template.spec;
    expect(pod.volumes).toEqual([{ name: 'volume-uploads', persistentVolumeClaim: { claimName: `slipway-volume-${volume.id}` } }]);
    expect(pod.containers[0].volumeMounts).toEqual([{ name: 'volume-uploads', mountPath: '/data' }]);
    expect(pod.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms).toEqual([
      { matchFields: [{ key: 'metadata.name', operator: 'In', values: [instance!.spec.nodeName] }] },
    ]);
    // The release command's Job mounts nothing (volumes belong to their process type).
    expect(await runtime.runOnce(plan, 'release', { deadline: Date.now() + 5000, signal: never, onOutput: () => undefined })).toMatchObject(
      {
        exitCode: 0,
      },
    );
    expect(kube.get('jobs', names.namespace, names.job('release', plan.deploymentId))!.spec.template.spec.volumes).toBeUndefined();
  });

  it("reports a timed-out Job's deletion that the cluster refuses (log line and counter), and still answers timed out", async () => {
    const plan = makePlan();
    await runtime.prepare(plan, () => undefined);
    kube.jobBehaviour = () => ({ outcome: 'hang' });
    kube.forbidden = (access) => access.verb === 'delete' && access.resource === 'jobs';
    const counted = () => backgroundFailureCounts().get('kubernetes_job_delete') ?? 0;
    const before = counted();
    const result = await runtime.runOnce(plan, 'release', { deadline: Date.now() + 800, signal: never, onOutput: () => undefined });
    expect(result).toEqual({ exitCode: null, signal: null, timedOut: true });
    expect(warnings).toContain('kubernetes job delete failed');
    expect(counted()).toBe(before + 1);
    const names = workloadNames(plan, 'slipway-');
    expect(kube.get('jobs', names.namespace, names.job('release', plan.deploymentId))).toBeDefined();
  });

  it('scales with a replicas patch only: the pod template and its pods stay', async () => {
    const plan = makePlan({ formation: { web: 1, worker: 1 } });
    await deploy(plan);
    const names = workloadNames(plan, 'slipway-');
    const before = kube.get('deployments', names.namespace, names.deployment('web'))!;
    const podsBefore = kube
      .list('pods')
      .filter(byType('web'))
      .map((p) => p.metadata.name);
    const seen = kube.requests.length;

    await runtime.reconcile(target(plan), { ...plan, formation: { web: 3, worker: 1 } }, never);

    // Besides renewing the pull credentials (a Secret), the only write is the replicas patch.
    const isPullSecret = (r: { body: unknown }) =>
      (r.body as { kind?: string; type?: string } | null)?.type === 'kubernetes.io/dockerconfigjson';
    const writes = kube.requests.slice(seen).filter((r) => r.method !== 'GET');
    expect(writes.filter(isPullSecret)).toHaveLength(1);
    expect(writes.filter((r) => !isPullSecret(r))).toEqual([
      expect.objectContaining({
        method: 'PATCH',
        path: `/apis/apps/v1/namespaces/${names.namespace}/deployments/${names.deployment('web')}/scale`,
        contentType: 'application/merge-patch+json',
        body: { spec: { replicas: 3 } },
      }),
    ]);
    const after = kube.get('deployments', names.namespace, names.deployment('web'))!;
    expect(after.spec.replicas).toBe(3);
    expect(after.spec.template).toEqual(before.spec.template);
    await waitFor('three web pods', () => kube.list('pods').filter(byType('web')).length === 3, { timeout: 5000, every: 25 });
    expect(
      kube
        .list('pods')
        .filter(byType('web'))
        .map((p) => p.metadata.name),
    ).toEqual(expect.arrayContaining(podsBefore));

    // Nothing to change: no write but the renewed pull credentials.
    const again = kube.requests.length;
    await runtime.reconcile(target(plan), { ...plan, formation: { web: 3, worker: 1 } }, never);
    expect(kube.requests.slice(again).filter((r) => r.method !== 'GET' && !isPullSecret(r))).toEqual([]);
  });

  it('a new pod class for a process type (a reconcile of the same deployment) reaches its Deployment', async () => {
    const plan = makePlan({ formation: { web: 1, worker: 1 } });
    await deploy(plan);
    const names = workloadNames(plan, 'slipway-');
    const small = { ...plan, resources: { ...plan.resources, worker: resourcesOf('m1.small') } };
    await runtime.reconcile(target(plan), small, never);
    const worker = kube.get('deployments', names.namespace, names.deployment('worker'))!;
    expect(worker.spec.template.spec.containers[0].resources).toEqual({
      requests: { cpu: '125m', memory: '256Mi' },
      limits: { cpu: '250m', memory: '384Mi' },
    });
    expect(worker.metadata.annotations[ANNOTATION.deploymentId]).toBe(plan.deploymentId);
    // Unchanged types are left alone, and the API server's canonical quantities (1000m read as 1) are no change.
    const web = kube.get('deployments', names.namespace, names.deployment('web'))!;
    web.spec.template.spec.containers[0].resources.limits.cpu = '1';
    const seen = kube.requests.length;
    await runtime.reconcile(target(plan), small, never);
    expect(kube.applies('Deployment').filter((r) => kube.requests.indexOf(r) >= seen)).toEqual([]);
  });

  it('reconciles back to the serving release after a failed deployment, and retires removed process types', async () => {
    const first = makePlan({ formation: { web: 1, worker: 1 } });
    await deploy(first);
    kube.deploymentBehaviour = () => 'never-ready';
    const second = nextPlan(first, { timeoutSeconds: 1 });
    await expect(deploy(second, 1000)).rejects.toBeInstanceOf(RolloutFailure);
    const names = workloadNames(first, 'slipway-');
    expect(kube.get('deployments', names.namespace, names.deployment('web'))!.metadata.annotations[ANNOTATION.deploymentId]).toBe(
      second.deploymentId,
    );

    kube.deploymentBehaviour = () => 'ready';
    await runtime.reconcile(target(first), first, never);
    const web = kube.get('deployments', names.namespace, names.deployment('web'))!;
    expect(web.metadata.annotations[ANNOTATION.deploymentId]).toBe(first.deploymentId);
    expect(web.spec.template.metadata.labels[LABEL.releaseVersion]).toBe('1');
    await waitFor(
      'only release 1 web pods',
      () =>
        kube
          .list('pods')
          .filter(byType('web'))
          .every((p) => p.metadata.annotations[ANNOTATION.deploymentId] === first.deploymentId),
      { timeout: 5000, every: 25 },
    );

    // A third release without a worker: its Deployment goes after the rollout.
    const third = nextPlan(first, { formation: { web: 1 } });
    await deploy(third);
    expect(kube.get('deployments', names.namespace, names.deployment('worker'))).toBeUndefined();
    // Config Secrets: the current and the previous release stay.
    const versions = kube
      .list('secrets', names.namespace)
      .filter((s) => s.metadata.labels[LABEL.component] === 'config')
      .map((s) => s.metadata.labels[LABEL.releaseVersion])
      .sort();
    expect(versions).toEqual(['1', '2']);
  });

  it("two applications whose slugs read alike (shop-api/web, shop/api-web) never take over each other's objects", async () => {
    const a = {
      ...makePlan({ projectSlug: 'shop-api', appSlug: 'web', formation: { web: 1 } }),
      hostname: 'web.shop-api.acme.example.test',
    };
    const b = {
      ...makePlan({ projectSlug: 'shop', appSlug: 'api-web', formation: { web: 1 } }),
      hostname: 'api-web.shop.acme.example.test',
    };
    await deploy(a);
    await deploy(b);
    const [na, nb] = [workloadNames(a, 'slipway-'), workloadNames(b, 'slipway-')];
    expect(na.namespace).toBe(nb.namespace);
    for (const [plan, names] of [
      [a, na],
      [b, nb],
    ] as const) {
      expect(kube.get('services', names.namespace, names.service)!.spec.selector[LABEL.applicationId]).toBe(plan.application.id);
      expect(kube.get('ingresses', names.namespace, names.ingress)!.spec.rules[0].host).toBe(plan.hostname);
      expect(kube.get('deployments', names.namespace, names.deployment('web'))!.metadata.annotations[ANNOTATION.deploymentId]).toBe(
        plan.deploymentId,
      );
      expect(kube.get('secrets', names.namespace, names.pullSecret)!.metadata.labels[LABEL.applicationId]).toBe(plan.application.id);
    }
  });

  it('reconcile without a plan removes everything of that application environment only', async () => {
    const a = makePlan({ appSlug: 'api' });
    const b = makePlan({ appSlug: 'admin' });
    await deploy(a);
    await deploy(b);
    await runtime.reconcile(target(a), null, never);
    const ofApp = (id: string) => (o: { metadata: Record<string, any> }) => o.metadata.labels?.[LABEL.applicationId] === id;
    for (const kind of ['deployments', 'services', 'ingresses', 'secrets']) {
      expect(kube.list(kind).filter(ofApp(a.application.id))).toEqual([]);
      expect(kube.list(kind).filter(ofApp(b.application.id)).length).toBeGreaterThan(0);
    }
    await waitFor('app a pods gone', () => kube.list('pods').filter(ofApp(a.application.id)).length === 0, { timeout: 5000, every: 25 });
  });

  it('reports usage from pod metrics and restart counts; without metrics.k8s.io CPU and memory read 0 (warned once)', async () => {
    const healthy = makePlan({ appSlug: 'api', formation: { web: 2, worker: 1 } });
    await deploy(healthy);
    kube.deploymentBehaviour = () => 'crash-loop';
    const crashing = makePlan({ appSlug: 'flaky', formation: { worker: 1 } });
    await expect(deploy(crashing)).rejects.toBeInstanceOf(RolloutFailure);
    kube.podMetrics = () => ({ cpu: '250m', memory: '128Mi' });

    const usage = await runtime.usage();
    const of = (plan: WorkloadPlan) =>
      usage.find((u) => u.applicationId === plan.application.id && u.environmentId === plan.environment.id);
    expect(of(healthy)).toEqual({
      applicationId: healthy.application.id,
      environmentId: healthy.environment.id,
      cpuMillicores: 750,
      memoryBytes: 3 * 128 * 1024 * 1024,
      // Each pod's 128 MiB against its container's memory limit (the plan's 1.5 GiB): the alert rules' memory_percent.
      memoryPercentMax: expect.closeTo((100 * 128) / 1536, 6),
      podCount: 3,
      restartCount: 0,
      processes: { web: { cpuMillicores: 500, podCount: 2 }, worker: { cpuMillicores: 250, podCount: 1 } },
    });
    expect(of(crashing)!.restartCount).toBeGreaterThan(0);

    kube.podMetrics = null;
    const bare = await runtime.usage();
    await runtime.usage();
    expect(bare.find((u) => u.applicationId === healthy.application.id)).toMatchObject({ cpuMillicores: 0, memoryBytes: 0, podCount: 3 });
    expect(warnings.filter((w) => w.includes('metrics.k8s.io'))).toHaveLength(1);
  });

  it('stops a one-off when the platform stops, and turns API errors into a one-line RolloutFailure', async () => {
    const plan = makePlan();
    await runtime.prepare(plan, () => undefined);
    kube.jobBehaviour = () => ({ outcome: 'hang' });
    const stop = new AbortController();
    setTimeout(() => stop.abort(), 300);
    expect(
      await runtime.runOnce(plan, 'release', { deadline: Date.now() + 10_000, signal: stop.signal, onOutput: () => undefined }),
    ).toEqual({ exitCode: null, signal: 'SIGTERM', timedOut: false });
    expect(kube.list('jobs')).toEqual([]);

    kube.unavailable = true;
    const error = await runtime.prepare(plan, () => undefined).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RolloutFailure);
    expect((error as Error).message).toBe('Setup: Kubernetes API HTTP 503: the server is currently unable to handle the request');
  });

  it('gives up at the deadline when the API server stops answering status reads (rollout and one-off)', async () => {
    const plan = makePlan({ formation: { web: 1 }, timeoutSeconds: 1 });
    await runtime.prepare(plan, () => undefined);
    kube.deploymentBehaviour = () => 'never-ready';
    // Applies go through; every read after them hangs (watches included).
    kube.stall = (r) => r.method === 'GET' && (r.path.endsWith('/pods') || r.path.endsWith('/deployments') || r.path.includes('/jobs'));
    const started = Date.now();
    const error = await runtime.rollout(plan, recordingLog().log, Date.now() + 300, never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RolloutFailure);
    expect((error as Error).message).toMatch(/did not answer in time/);
    expect(Date.now() - started).toBeLessThan(300 + 5000 + 1500);

    const oneOff = await runtime
      .runOnce(plan, 'release', { deadline: Date.now() + 300, signal: never, onOutput: () => undefined })
      .catch((e: unknown) => e);
    expect(oneOff).toBeInstanceOf(RolloutFailure);
    expect((oneOff as Error).message).toMatch(/^release: the Kubernetes API server did not answer in time$/);
  }, 20_000);

  it('gives up on a write the API server never answers (request timeout), naming the step', async () => {
    const impatient = new KubernetesRuntime({
      kubeConfig: kube.kubeConfig(),
      namespacePrefix: 'slipway-',
      ingressClass: null,
      pullSecret: async () => null,
      pollIntervalMs: 100,
      requestTimeoutMs: 300,
    });
    kube.stall = (r) => r.method === 'PATCH';
    const started = Date.now();
    const error = await impatient.prepare(makePlan(), () => undefined).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RolloutFailure);
    expect((error as Error).message).toBe('Setup: the Kubernetes API server did not answer within 0.3 s');
    expect(Date.now() - started).toBeLessThan(2000);
    await impatient.shutdown();
  });

  it('runs pods that pass restricted Pod Security admission, in a namespace labelled restricted with its NetworkPolicy', async () => {
    const plan = makePlan({ formation: { web: 1, worker: 1 } });
    const { result } = await deploy(plan);
    expect(result.instances).toHaveLength(2);
    const names = workloadNames(plan, 'slipway-');
    expect(kube.get('namespaces', undefined, names.namespace)!.metadata.labels).toMatchObject({
      'pod-security.kubernetes.io/enforce': 'restricted',
      'pod-security.kubernetes.io/enforce-version': 'latest',
    });
    const policy = kube.get('networkpolicies', names.namespace, 'slipway-isolation')!;
    // In: the same organization and the ingress controller. Out: the same organization, the
    // cluster's DNS and the internet, never private or link-local addresses (the platform's
    // namespace, the nodes, the metadata service).
    expect(policy.spec).toEqual({
      podSelector: { matchExpressions: [{ key: 'slipway.dev/addon-id', operator: 'DoesNotExist' }] },
      policyTypes: ['Ingress', 'Egress'],
      ingress: [
        { from: [{ podSelector: {} }] },
        { from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } } }] },
      ],
      egress: [
        { to: [{ podSelector: {} }] },
        {
          to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } } }],
          ports: [
            { protocol: 'UDP', port: 53 },
            { protocol: 'TCP', port: 53 },
          ],
        },
        {
          to: [
            {
              ipBlock: {
                cidr: '0.0.0.0/0',
                except: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', '169.254.0.0/16', '127.0.0.0/8'],
              },
            },
            { ipBlock: { cidr: '::/0', except: ['fc00::/7', 'fe80::/10', '::1/128'] } },
          ],
        },
      ],
    });
    // The fake's Pod Security admission let these pods in (it refuses root pods: test/kubernetes/fake-kube-api.test.ts).
    for (const pod of kube.list('pods', names.namespace)) {
      expect(pod.spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 10001, seccompProfile: { type: 'RuntimeDefault' } });
      expect(pod.spec.automountServiceAccountToken).toBe(false);
    }
    // A release Job's pod passes too.
    expect(await runtime.runOnce(plan, 'release', { deadline: Date.now() + 5000, signal: never, onOutput: () => undefined })).toMatchObject(
      { exitCode: 0 },
    );
  });

  it('fails at once, naming the policy, when admission refuses the pods of a Deployment or a release Job', async () => {
    const plan = makePlan({ formation: { web: 1 }, timeoutSeconds: 30 });
    kube.podAdmission = (pod) =>
      pod.spec.containers[0].image.startsWith('registry.internal/') ? null : 'images must come from registry.internal';
    const error = await deploy(plan, 30_000).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RolloutFailure);
    expect((error as Error).message).toMatch(
      /^Deployment failed: web: the cluster refused to create its pods: admission webhook "pods.policy.fake" denied the request: images must come from registry.internal$/,
    );

    const output: string[] = [];
    const result = await runtime.runOnce(plan, 'release', {
      deadline: Date.now() + 30_000,
      signal: never,
      onOutput: (line) => output.push(line),
    });
    expect(result).toEqual({ exitCode: null, signal: null, timedOut: false });
    expect(output.join('\n')).toContain('release: the cluster refused to create its pods: admission webhook "pods.policy.fake"');
    expect(output.join('\n')).toContain('denied the request: images must come from registry.internal');
    const names = workloadNames(plan, 'slipway-');
    expect(kube.get('jobs', names.namespace, names.job('release', plan.deploymentId))).toBeUndefined();
  });

  it('fails the deployment with the refusal when the cluster forbids the organization namespace (403)', async () => {
    const plan = makePlan();
    const names = workloadNames(plan, 'slipway-');
    kube.forbiddenNamespaces.add(names.namespace);
    const error = await runtime.prepare(plan, () => undefined).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RolloutFailure);
    expect((error as Error).message).toBe(
      `Setup: the Kubernetes cluster refused the request (HTTP 403 Forbidden): networkpolicies.networking.k8s.io "slipway-isolation" is forbidden: ` +
        `User "system:serviceaccount:slipway:slipway" cannot patch resource "networkpolicies" in API group "networking.k8s.io" in the namespace "${names.namespace}"`,
    );
  });

  it('server-side apply: the next release takes back a field another manager changed, keeps what others added, never sends a resourceVersion', async () => {
    const first = makePlan({ formation: { web: 1 } });
    await deploy(first);
    const names = workloadNames(first, 'slipway-');
    const name = names.deployment('web');
    const selector = kube.get('deployments', names.namespace, name)!.spec.selector;
    // `kubectl set image` and `kubectl rollout restart`, as server-side applies of their own.
    kube.seed('deployments', {
      metadata: { name, namespace: names.namespace },
      spec: {
        template: {
          metadata: { annotations: { 'kubectl.kubernetes.io/restartedAt': '2026-01-01T00:00:00Z' } },
          spec: { containers: [{ name: 'web', image: 'someone/else:latest' }] },
        },
      },
    });
    const second = nextPlan(first, {});
    await deploy(second);
    const web = kube.get('deployments', names.namespace, name)!;
    const container = web.spec.template.spec.containers[0];
    expect(container.image).toBe(second.image.registryReference);
    expect(web.spec.template.metadata.annotations).toMatchObject({
      'kubectl.kubernetes.io/restartedAt': '2026-01-01T00:00:00Z',
      [ANNOTATION.deploymentId]: second.deploymentId,
    });
    const imageOwners = web.metadata.managedFields
      .filter((f: any) => f.fieldsV1['f:spec']?.['f:template']?.['f:spec']?.['f:containers']?.['k:{"name":"web"}']?.['f:image'])
      .map((f: any) => f.manager);
    expect(imageOwners).toEqual(['slipway']);
    // The selector (immutable on a cluster) is the same for every release.
    expect(web.spec.selector).toEqual(selector);
    for (const r of kube.applies()) expect((r.body as any).metadata.resourceVersion).toBeUndefined();
  });

  it('rolls a release out within maxSurge 1 / maxUnavailable 0 and answers only new pods while old ones terminate', async () => {
    await runtime.shutdown();
    await kube.stop();
    kube = await FakeKubeApi.start({ graceSecondMs: 1000 }); // a 30 s grace period lasts 30 s
    runtime = makeRuntime(kube);
    const first = makePlan({ formation: { web: 3 } });
    await deploy(first);
    const names = workloadNames(first, 'slipway-');
    const from = kube.rolloutSteps.length;
    const second = nextPlan(first, {});
    const { result } = await deploy(second);

    const steps = kube.rolloutSteps.slice(from).filter((s) => s.deployment === names.deployment('web'));
    expect(steps.length).toBeGreaterThan(3);
    for (const step of steps) {
      expect(step.newReplicas + step.oldReplicas).toBeLessThanOrEqual(4);
      expect(step.available).toBeGreaterThanOrEqual(3);
    }
    expect(steps.at(-1)).toMatchObject({ newReplicas: 3, oldReplicas: 0, available: 3 });
    const pods = kube.list('pods', names.namespace);
    const terminating = pods.filter((p) => p.metadata.deletionTimestamp);
    expect(terminating.length).toBeGreaterThan(0);
    expect(result.instances).toHaveLength(3);
    for (const instance of result.instances) {
      const pod = pods.find((p) => p.metadata.name === instance.pod)!;
      expect(pod.metadata.deletionTimestamp).toBeUndefined();
      expect(pod.metadata.annotations[ANNOTATION.deploymentId]).toBe(second.deploymentId);
    }
  });

  it('refuses a release without a pushed image', async () => {
    await expect(runtime.prepare(makePlan({ registryReference: null }), () => undefined)).rejects.toThrow(
      /^The Kubernetes runtime runs container images: build from a Dockerfile with REGISTRY_URL set/,
    );
  });
});

describe('Kubernetes quantities', () => {
  it('parses CPU and memory quantities', () => {
    expect(cpuMillicores('250m')).toBe(250);
    expect(cpuMillicores('12345678n')).toBeCloseTo(12.345678);
    expect(cpuMillicores('1')).toBe(1000);
    expect(cpuMillicores('1500u')).toBe(1.5);
    expect(memoryBytes('128Mi')).toBe(134217728);
    expect(memoryBytes('1024Ki')).toBe(1048576);
    expect(memoryBytes('1G')).toBe(1e9);
    expect(memoryBytes('500')).toBe(500);
  });
});
