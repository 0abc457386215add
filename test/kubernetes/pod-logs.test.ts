/**
 * Application logs on Kubernetes: the runtime's `onInstanceOutput` follows the logs of the
 * platform's running pods (long-running processes only) on the fake API server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppOutputLine } from '../../src/platform/runtime/application-runtime.js';
import { KubernetesRuntime } from '../../src/platform/runtime/kubernetes/kubernetes-runtime.js';
import { LABEL, MANAGER } from '../../src/platform/runtime/kubernetes/names.js';
import { FakeKubeApi } from '../helpers/fake-kube-api.js';
import { waitFor } from '../helpers/wait.js';

let kube: FakeKubeApi;
let runtime: KubernetesRuntime;

beforeAll(async () => {
  kube = await FakeKubeApi.start();
});
afterAll(async () => {
  await runtime?.shutdown();
  await kube?.stop();
});

const pod = (name: string, component: string | null) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name,
    namespace: 'slipway-acme',
    labels: {
      [LABEL.managedBy]: MANAGER,
      [LABEL.applicationId]: '0190c0de-0000-7000-8000-000000000001',
      [LABEL.environmentId]: '0190c0de-0000-7000-8000-000000000002',
      [LABEL.processType]: 'web',
      ...(component ? { [LABEL.component]: component } : {}),
    },
  },
  spec: { containers: [{ name: 'web', image: 'registry.example/acme/shop/web@sha256:' + '1'.repeat(64) }] },
});

/** A runtime on the fake API server, with what its log follower needs. */
const runtimeOnFakeCluster = () =>
  new KubernetesRuntime({
    kubeConfig: kube.kubeConfig(),
    namespacePrefix: 'slipway-',
    ingressClass: null,
    pullSecret: async () => null,
  } as never);

describe('Kubernetes application logs', () => {
  it("follows running pods' logs, not one-offs', with application, environment, process and pod", async () => {
    kube.seed('namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'slipway-acme' } });
    kube.seed('pods', pod('web-abc', null));
    kube.seed('pods', pod('release-xyz', 'one-off'));
    await waitFor('the pods to run', async () => kube.list('pods', 'slipway-acme').every((p) => p.status?.phase === 'Running'), 10_000);

    runtime = runtimeOnFakeCluster();
    const lines: AppOutputLine[] = [];
    runtime.onInstanceOutput((l) => lines.push(l));
    await runtime.start();
    await waitFor('the follower to attach', async () => kube.requests.some((r) => r.path.includes('/pods/web-abc/log')), 10_000);
    kube.appendPodLog('slipway-acme', 'web-abc', 'listening on 8080\n');
    kube.appendPodLog('slipway-acme', 'release-xyz', 'migrating\n');
    await waitFor('the web line', async () => lines.some((l) => l.line === 'listening on 8080'), 10_000);
    expect(lines.find((l) => l.line === 'listening on 8080')).toMatchObject({
      applicationId: '0190c0de-0000-7000-8000-000000000001',
      environmentId: '0190c0de-0000-7000-8000-000000000002',
      instanceId: 'web-abc',
      processType: 'web',
      stream: 'stdout',
    });
    expect(lines.some((l) => l.line === 'migrating')).toBe(false);
  }, 30_000);

  it('follows nothing once stopped, even when a listing of the pods was on its way at the stop', async () => {
    await runtime.shutdown();
    let answerList = () => {};
    const listed = new Promise<void>((resolve) => (answerList = resolve));
    kube.hold = (r) => (r.path === '/api/v1/pods' ? listed : undefined);
    const from = kube.requests.length;
    const since = () => kube.requests.slice(from);
    runtime = runtimeOnFakeCluster();
    runtime.onInstanceOutput(() => {});
    await runtime.start();
    await waitFor('the listing of the pods on its way', async () => since().some((r) => r.path === '/api/v1/pods'), 10_000);
    // The platform stops (its database is closed right after): then the cluster answers the listing.
    await runtime.shutdown();
    answerList();
    // A follower started by the late answer asks for the pod's log within milliseconds: a second shows there is none.
    await new Promise((r) => setTimeout(r, 1000));
    expect(since().filter((r) => r.path.endsWith('/log'))).toEqual([]);
  }, 30_000);
});
