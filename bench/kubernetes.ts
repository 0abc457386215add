/**
 * Overhead of the Kubernetes runtime per deployment (`npx tsx bench/kubernetes.ts`):
 * Setup, the release Job, the rollout and the postdeploy Job of web=2 worker=1, against the
 * fake API server of the tests (pods become ready after a few 40 ms controller ticks). It
 * reports wall time per phase and how many API requests one deployment makes: what the
 * driver adds on top of a cluster's own scheduling and image pulls.
 *
 *   npx tsx bench/kubernetes.ts [--deploys 10] [--poll 1000] [--tick 40]
 */
import { parseArgs } from 'node:util';
import { KubernetesRuntime } from '../src/platform/runtime/kubernetes/kubernetes-runtime.js';
import { FakeKubeApi } from '../test/helpers/fake-kube-api.js';
import { makePlan, nextPlan } from '../test/kubernetes/plan-fixture.js';

const { values } = parseArgs({
  options: {
    deploys: { type: 'string', default: '10' },
    poll: { type: 'string', default: '1000' },
    tick: { type: 'string', default: '40' },
  },
});
const deploys = Number(values.deploys);
const never = new AbortController().signal;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const p95 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.95))]!;

const kube = await FakeKubeApi.start({ tickMs: Number(values.tick) });
const runtime = new KubernetesRuntime({
  kubeConfig: kube.kubeConfig(),
  namespacePrefix: 'bench-',
  ingressClass: null,
  pullSecret: async () => JSON.stringify({ auths: { 'registry.example.test': { auth: Buffer.from('u:p').toString('base64') } } }),
  pollIntervalMs: Number(values.poll),
});
await runtime.start();

const phases: Record<'setup' | 'release' | 'rollout' | 'postdeploy' | 'total', number[]> = {
  setup: [],
  release: [],
  rollout: [],
  postdeploy: [],
  total: [],
};
const requests: number[] = [];
const noLog = { step: async () => {}, line: () => {} };
let plan = makePlan({ formation: { web: 2, worker: 1 } });
for (let i = 0; i < deploys; i++) {
  if (i > 0) plan = nextPlan(plan);
  const seen = kube.requests.length;
  const t0 = performance.now();
  await runtime.prepare(plan, () => {});
  const t1 = performance.now();
  await runtime.runOnce(plan, 'release', { deadline: Date.now() + 30_000, signal: never, onOutput: () => {} });
  const t2 = performance.now();
  await runtime.rollout(plan, noLog, Date.now() + 30_000, never);
  const t3 = performance.now();
  await runtime.runOnce(plan, 'postdeploy', { deadline: Date.now() + 30_000, signal: never, onOutput: () => {} });
  const t4 = performance.now();
  phases.setup.push(t1 - t0);
  phases.release.push(t2 - t1);
  phases.rollout.push(t3 - t2);
  phases.postdeploy.push(t4 - t3);
  phases.total.push(t4 - t0);
  requests.push(kube.requests.length - seen);
}
await runtime.shutdown();
await kube.stop();

console.log(
  `Kubernetes runtime against the fake API server: ${deploys} deployments of web=2 worker=1 (poll ${values.poll} ms, fake controller tick ${values.tick} ms)`,
);
console.log('phase        median ms   p95 ms');
for (const [name, xs] of Object.entries(phases))
  console.log(`${name.padEnd(12)} ${median(xs).toFixed(0).padStart(9)} ${p95(xs).toFixed(0).padStart(8)}`);
console.log(`API requests per deployment: median ${median(requests)}, max ${Math.max(...requests)}`);
