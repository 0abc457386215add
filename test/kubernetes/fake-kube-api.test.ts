/**
 * The fake Kubernetes API server behaves as the Kubernetes documentation describes where the
 * driver depends on it (issue 18): each test here failed against the earlier, lenient fake.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeKubeApi, type KObject } from '../helpers/fake-kube-api.js';

let kube: FakeKubeApi;
const NS = 'team-a';

interface Answer {
  status: number;
  body: any;
}

async function call(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<Answer> {
  const r = await fetch(`${kube.url}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': contentType },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: r.status, body: await r.json() };
}

const deploymentsPath = `/apis/apps/v1/namespaces/${NS}/deployments`;
const apply = (manager: string, object: KObject, force = false) =>
  call(
    'PATCH',
    `${deploymentsPath}/${object.metadata.name}?fieldManager=${manager}${force ? '&force=true' : ''}`,
    object,
    'application/apply-patch+yaml',
  );

function deployment(
  name: string,
  options: {
    replicas?: number;
    image?: string;
    env?: Array<{ name: string; value: string }>;
    selector?: Record<string, string>;
    surge?: number;
    unavailable?: number;
  } = {},
): KObject {
  const labels = options.selector ?? { app: name };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: NS },
    spec: {
      replicas: options.replicas ?? 1,
      selector: { matchLabels: labels },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: options.surge ?? 1, maxUnavailable: options.unavailable ?? 0 } },
      template: {
        metadata: { labels },
        spec: {
          containers: [
            {
              name: 'web',
              image: options.image ?? 'app:v1',
              ...(options.env ? { env: options.env } : {}),
              ports: [{ containerPort: 5000 }],
            },
          ],
        },
      },
    },
  };
}

async function eventually<T>(
  read: () => T | undefined | false | Promise<T | undefined | false>,
  what: string,
  timeoutMs = 5000,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const managers = (o: KObject) =>
  Object.fromEntries((o.metadata.managedFields ?? []).map((f: any) => [`${f.manager}/${f.operation}`, f.fieldsV1]));
const rolledOut = (name: string, replicas: number) => () => {
  const d = kube.get('deployments', NS, name);
  const s = d?.status;
  return (
    s &&
    d.metadata.generation === s.observedGeneration &&
    s.replicas === replicas &&
    s.updatedReplicas === replicas &&
    s.readyReplicas === replicas &&
    s.availableReplicas === replicas &&
    d
  );
};

beforeEach(async () => {
  kube = await FakeKubeApi.start({ tickMs: 10 });
  expect(
    (
      await call(
        'PATCH',
        `/api/v1/namespaces/${NS}?fieldManager=admin`,
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
        'application/apply-patch+yaml',
      )
    ).status,
  ).toBe(200);
});

afterEach(async () => {
  await kube.stop();
});

describe('fake Kubernetes API: server-side apply', () => {
  it('records field ownership per manager; a changed field another manager owns is a 409 conflict unless forced', async () => {
    expect((await apply('slipway', deployment('web', { replicas: 2 }))).status).toBe(200);
    const other = deployment('web', { replicas: 5 });
    const refused = await apply('kubectl', other);
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({
      reason: 'Conflict',
      message: 'Apply failed with 1 conflict: conflict with "slipway" using apps/v1: .spec.replicas',
    });
    expect(kube.get('deployments', NS, 'web')!.spec.replicas).toBe(2);

    // The same value is no conflict: both managers own the field.
    expect((await apply('kubectl', deployment('web', { replicas: 2 }))).status).toBe(200);
    const forced = await apply('kubectl', other, true);
    expect(forced.status).toBe(200);
    expect(forced.body.spec.replicas).toBe(5);
    const owners = managers(forced.body);
    expect(owners['kubectl/Apply']['f:spec']['f:replicas']).toEqual({});
    expect(owners['slipway/Apply']['f:spec']['f:replicas']).toBeUndefined();
    expect(owners['slipway/Apply']['f:spec']['f:template']['f:spec']['f:containers']['k:{"name":"web"}']['f:image']).toEqual({});
  });

  it('merges lists by key (containers and env by name, ports by containerPort) and removes only what the manager stopped applying', async () => {
    await apply(
      'slipway',
      deployment('web', {
        env: [
          { name: 'A', value: '1' },
          { name: 'B', value: '2' },
        ],
      }),
    );
    // Another manager adds a container, an env var and a template annotation.
    const sidecar = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: NS },
      spec: {
        template: {
          metadata: { annotations: { 'kubectl.kubernetes.io/restartedAt': '2026-01-01T00:00:00Z' } },
          spec: {
            containers: [
              { name: 'web', env: [{ name: 'C', value: '3' }] },
              { name: 'proxy', image: 'envoy:1' },
            ],
          },
        },
      },
    };
    expect((await apply('mesh', sidecar)).status).toBe(200);
    let d = kube.get('deployments', NS, 'web')!;
    expect(d.spec.template.spec.containers.map((c: any) => c.name)).toEqual(['web', 'proxy']);
    expect(d.spec.template.spec.containers[0].env.map((e: any) => e.name)).toEqual(['A', 'B', 'C']);
    expect(d.spec.template.spec.containers[0].image).toBe('app:v1');

    // slipway no longer applies B: B goes, C (mesh's) and the annotation stay.
    await apply('slipway', deployment('web', { image: 'app:v2', env: [{ name: 'A', value: '1' }] }));
    d = kube.get('deployments', NS, 'web')!;
    expect(d.spec.template.spec.containers[0]).toMatchObject({ image: 'app:v2', ports: [{ containerPort: 5000 }] });
    expect(d.spec.template.spec.containers[0].env.map((e: any) => e.name)).toEqual(['A', 'C']);
    expect(d.spec.template.spec.containers[1]).toMatchObject({ name: 'proxy', image: 'envoy:1' });
    expect(d.spec.template.metadata.annotations).toEqual({ 'kubectl.kubernetes.io/restartedAt': '2026-01-01T00:00:00Z' });
  });
});

describe('fake Kubernetes API: validation and concurrency', () => {
  it('answers 409 to an update or patch naming a stale resourceVersion', async () => {
    const created = await apply('slipway', deployment('web'));
    const stale = created.body.metadata.resourceVersion;
    expect((await call('PATCH', `${deploymentsPath}/web`, { spec: { replicas: 2 } }, 'application/merge-patch+json')).status).toBe(200);
    const patch = await call(
      'PATCH',
      `${deploymentsPath}/web`,
      { metadata: { resourceVersion: stale }, spec: { replicas: 3 } },
      'application/merge-patch+json',
    );
    expect(patch.status).toBe(409);
    expect(patch.body.message).toContain('the object has been modified; please apply your changes to the latest version and try again');
    const current = kube.get('deployments', NS, 'web')!;
    const put = await call('PUT', `${deploymentsPath}/web`, { ...current, metadata: { ...current.metadata, resourceVersion: stale } });
    expect(put.status).toBe(409);
    expect(kube.get('deployments', NS, 'web')!.spec.replicas).toBe(2);
    // The current version (a Secret: no controller writes its status in between) is accepted.
    const secretPath = `/api/v1/namespaces/${NS}/secrets/s`;
    const secret = await call(
      'PATCH',
      `${secretPath}?fieldManager=slipway`,
      { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, data: { a: 'MQ==' } },
      'application/apply-patch+yaml',
    );
    const fresh = await call('PUT', secretPath, { ...secret.body, data: { a: 'Mg==' } });
    expect(fresh.status).toBe(200);
    expect((await call('PUT', secretPath, { ...secret.body, data: { a: 'Mw==' } })).status).toBe(409);
    expect(kube.get('secrets', NS, 's')!.data).toEqual({ a: 'Mg==' });
  });

  it('refuses a changed Deployment selector (immutable) and a selector the template labels do not match: 422 Invalid', async () => {
    await apply('slipway', deployment('web'));
    const changed = await apply('slipway', deployment('web', { selector: { app: 'web', release: '2' } }), true);
    expect(changed.status).toBe(422);
    expect(changed.body).toMatchObject({ reason: 'Invalid', message: expect.stringContaining('spec.selector: Invalid value') });
    expect(changed.body.message).toContain('field is immutable');
    const mismatched = deployment('other');
    mismatched.spec.template.metadata.labels = { app: 'something-else' };
    expect((await apply('slipway', mismatched)).body.message).toContain('`selector` does not match template `labels`');
  });
});

describe('fake Kubernetes API: Deployment rollouts through ReplicaSets', () => {
  it.each([
    { surge: 1, unavailable: 0 },
    { surge: 0, unavailable: 2 },
    { surge: 2, unavailable: 1 },
  ])('rolls 4 replicas within maxSurge $surge and maxUnavailable $unavailable', async ({ surge, unavailable }) => {
    await apply('slipway', deployment('web', { replicas: 4, surge, unavailable }));
    await eventually(rolledOut('web', 4), 'the first rollout');
    const from = kube.rolloutSteps.length;
    await apply('slipway', deployment('web', { replicas: 4, surge, unavailable, image: 'app:v2' }));
    const done = await eventually(
      () =>
        rolledOut('web', 4)() &&
        kube.list('replicasets', NS).every((rs) => rs.spec.template.spec.containers[0].image === 'app:v2' || rs.spec.replicas === 0) &&
        rolledOut('web', 4)(),
      'the second rollout',
    );

    const steps = kube.rolloutSteps.slice(from).filter((s) => s.deployment === 'web');
    expect(steps.length).toBeGreaterThan(2);
    for (const step of steps) {
      expect(step.newReplicas + step.oldReplicas).toBeLessThanOrEqual(4 + surge);
      expect(step.available).toBeGreaterThanOrEqual(4 - unavailable);
    }
    // In steps: the new ReplicaSet grows by at most the surge plus what the old ones gave up.
    const growth = steps.map((s, i) => s.newReplicas - (i ? steps[i - 1]!.newReplicas : 0));
    expect(Math.max(...growth)).toBeLessThanOrEqual(Math.max(surge, unavailable) + surge);
    expect(steps.at(-1)).toMatchObject({ newReplicas: 4, oldReplicas: 0, available: 4 });

    const sets = kube.list('replicasets', NS);
    expect(sets).toHaveLength(2);
    const pods = kube.list('pods', NS).filter((p) => !p.metadata.deletionTimestamp);
    expect(pods).toHaveLength(4);
    const current = sets.find((rs) => rs.spec.replicas === 4)!;
    expect(pods.every((p) => p.metadata.ownerReferences[0].uid === current.metadata.uid)).toBe(true);
    expect(done.status.unavailableReplicas).toBe(0);
    expect(done.status.conditions.find((c: any) => c.type === 'Progressing').reason).toBe('NewReplicaSetAvailable');
  });

  it('scales the current ReplicaSet in place through the scale subresource (pods kept)', async () => {
    await apply('slipway', deployment('web', { replicas: 1 }));
    await eventually(rolledOut('web', 1), 'one replica');
    const first = kube.list('pods', NS)[0]!.metadata.name;
    const scaled = await call(
      'PATCH',
      `${deploymentsPath}/web/scale?fieldManager=slipway`,
      { spec: { replicas: 3 } },
      'application/merge-patch+json',
    );
    expect(scaled.status).toBe(200);
    await eventually(rolledOut('web', 3), 'three replicas');
    expect(kube.list('replicasets', NS)).toHaveLength(1);
    expect(kube.list('pods', NS).map((p) => p.metadata.name)).toContain(first);
    // The scale is an Update: spec.replicas changes owner.
    expect(managers(kube.get('deployments', NS, 'web')!)['slipway/Update']['f:spec']['f:replicas']).toEqual({});
  });
});

describe('fake Kubernetes API: graceful deletion', () => {
  it('a deleted pod stays terminating (deletionTimestamp) for its grace period; finalizers and Foreground deletion hold their object', async () => {
    await apply('slipway', deployment('web', { replicas: 1 }));
    const pod = (await eventually(rolledOut('web', 1), 'a pod')) && kube.list('pods', NS)[0]!;
    const deleted = await call('DELETE', `/api/v1/namespaces/${NS}/pods/${pod.metadata.name}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body.metadata).toMatchObject({ deletionTimestamp: expect.any(String), deletionGracePeriodSeconds: 30 });
    expect(kube.get('pods', NS, pod.metadata.name)!.metadata.deletionTimestamp).toBeDefined();
    await eventually(() => !kube.get('pods', NS, pod.metadata.name), 'the pod gone after its grace period');

    // Foreground: the Deployment stays until its ReplicaSets and pods are gone.
    const foreground = await call('DELETE', `${deploymentsPath}/web?propagationPolicy=Foreground`);
    expect(foreground.body.metadata.finalizers).toContain('foregroundDeletion');
    expect(kube.get('deployments', NS, 'web')!.metadata.deletionTimestamp).toBeDefined();
    await eventually(() => !kube.get('deployments', NS, 'web'), 'the Deployment gone after its dependents');
    expect(kube.list('replicasets', NS)).toEqual([]);
    expect(kube.list('pods', NS)).toEqual([]);

    // A finalizer holds an object until its controller removes it.
    const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'held', namespace: NS, finalizers: ['example.com/cleanup'] } };
    await call('PATCH', `/api/v1/namespaces/${NS}/secrets/held?fieldManager=slipway`, secret, 'application/apply-patch+yaml');
    expect((await call('DELETE', `/api/v1/namespaces/${NS}/secrets/held`)).body.metadata.deletionTimestamp).toBeDefined();
    expect(kube.get('secrets', NS, 'held')).toBeDefined();
    await call('PATCH', `/api/v1/namespaces/${NS}/secrets/held`, { metadata: { finalizers: null } }, 'application/merge-patch+json');
    expect(kube.get('secrets', NS, 'held')).toBeUndefined();

    // A namespace terminates until its contents are gone, and takes no new content meanwhile.
    await apply('slipway', deployment('api'));
    const namespace = await call('DELETE', `/api/v1/namespaces/${NS}`);
    expect(namespace.body.status.phase).toBe('Terminating');
    const late = await apply('slipway', deployment('late'));
    expect(late.status).toBe(403);
    expect(late.body.message).toBe(
      `deployments.apps "late" is forbidden: unable to create new content in namespace ${NS} because it is being terminated`,
    );
    await eventually(() => !kube.get('namespaces', undefined, NS), 'the namespace gone with its contents');
    expect(kube.list('deployments', NS)).toEqual([]);
  });
});

describe('fake Kubernetes API: authorization and admission', () => {
  it('answers 403 Forbidden in a namespace the caller may not use', async () => {
    kube.forbiddenNamespaces.add(NS);
    const refused = await apply('slipway', deployment('web'));
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({
      reason: 'Forbidden',
      message: `deployments.apps "web" is forbidden: User "system:serviceaccount:slipway:slipway" cannot patch resource "deployments" in API group "apps" in the namespace "${NS}"`,
    });
    expect((await call('GET', `/api/v1/namespaces/${NS}/pods`)).status).toBe(403);
    expect(kube.get('deployments', NS, 'web')).toBeUndefined();
  });

  it('enforces the restricted Pod Security Standard in a labelled namespace: a violating pod is refused (403), a Deployment of them reports FailedCreate', async () => {
    kube.seed('namespaces', { metadata: { name: NS, labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } } });
    const root = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'root', namespace: NS },
      spec: { containers: [{ name: 'app', image: 'app:v1' }] },
    };
    const refused = await call('POST', `/api/v1/namespaces/${NS}/pods`, root);
    expect(refused.status).toBe(403);
    expect(refused.body.message).toBe(
      'pods "root" is forbidden: violates PodSecurity "restricted:latest": ' +
        'allowPrivilegeEscalation != false (container "app" must set securityContext.allowPrivilegeEscalation=false), ' +
        'unrestricted capabilities (container "app" must set securityContext.capabilities.drop=["ALL"]), ' +
        'runAsNonRoot != true (pod or container "app" must set securityContext.runAsNonRoot=true), ' +
        'seccompProfile (pod or container "app" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")',
    );

    const hardened = {
      ...root,
      metadata: { name: 'hardened', namespace: NS },
      spec: {
        securityContext: { runAsNonRoot: true, runAsUser: 10001, seccompProfile: { type: 'RuntimeDefault' } },
        containers: [
          { name: 'app', image: 'app:v1', securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } } },
        ],
      },
    };
    expect((await call('POST', `/api/v1/namespaces/${NS}/pods`, hardened)).status).toBe(201);

    // Pod Security admission checks pods, not their Deployment: the ReplicaSet cannot create them.
    expect((await apply('slipway', deployment('web'))).status).toBe(200);
    const failing = await eventually(
      () => kube.get('deployments', NS, 'web')?.status?.conditions?.find((c: any) => c.type === 'ReplicaFailure'),
      'ReplicaFailure',
    );
    expect(failing).toMatchObject({
      status: 'True',
      reason: 'FailedCreate',
      message: expect.stringContaining('violates PodSecurity "restricted:latest"'),
    });
    const event = kube.list('events', NS).find((e) => e.reason === 'FailedCreate')!;
    expect(event.involvedObject.kind).toBe('ReplicaSet');
    expect(event.message).toMatch(/^Error creating: pods "web-[0-9a-f]+-[0-9a-f]+" is forbidden: violates PodSecurity/);
    expect(kube.list('pods', NS).map((p) => p.metadata.name)).toEqual(['hardened']);
  });
});
