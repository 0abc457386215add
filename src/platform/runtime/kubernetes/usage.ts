/**
 * Resource usage per application environment from pod status (running pods, restarts) and
 * metrics.k8s.io (CPU and memory), summed by the pods' application/environment labels.
 */
import type { PodMetric, V1Pod } from '@kubernetes/client-node';
import type { AppUsage } from '../application-runtime.js';
import { LABEL } from './names.js';

const CPU_SUFFIX: Record<string, number> = { n: 1e-6, u: 1e-3, m: 1, '': 1000 };
const MEMORY_SUFFIX: Record<string, number> = {
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 1024,
  Mi: 1024 ** 2,
  Gi: 1024 ** 3,
  Ti: 1024 ** 4,
  Pi: 1024 ** 5,
  Ei: 1024 ** 6,
};

function splitQuantity(quantity: string): { value: number; suffix: string } | null {
  const match = /^([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)([a-zA-Z]*)$/.exec(quantity.trim());
  if (!match) return null;
  return { value: Number(match[1]), suffix: match[2]! };
}

/** `250m` → 250, `12345678n` → 12.345678, `1` → 1000, `1.5` → 1500 (millicores). */
export function cpuMillicores(quantity: string): number {
  const q = splitQuantity(quantity);
  const factor = q ? CPU_SUFFIX[q.suffix] : undefined;
  return q && factor !== undefined ? q.value * factor : 0;
}

/** `128Mi` → 134217728, `1024Ki` → 1048576, `1G` → 1e9, `500` → 500 (bytes). */
export function memoryBytes(quantity: string): number {
  const q = splitQuantity(quantity);
  const factor = q ? MEMORY_SUFFIX[q.suffix] : undefined;
  return q && factor !== undefined ? q.value * factor : 0;
}

/** Sums pods and their metrics (metrics null: the API is absent, CPU and memory read 0). */
export function summarizeUsage(pods: V1Pod[], metrics: PodMetric[] | null): AppUsage[] {
  const metricByPod = new Map((metrics ?? []).map((m) => [`${m.metadata.namespace}/${m.metadata.name}`, m]));
  const byApp = new Map<string, AppUsage>();
  for (const pod of pods) {
    const applicationId = pod.metadata?.labels?.[LABEL.applicationId];
    const environmentId = pod.metadata?.labels?.[LABEL.environmentId];
    if (!applicationId || !environmentId) continue;
    const key = `${applicationId}/${environmentId}`;
    let usage = byApp.get(key);
    if (!usage) {
      usage = { applicationId, environmentId, cpuMillicores: 0, memoryBytes: 0, podCount: 0, restartCount: 0, processes: {} };
      byApp.set(key, usage);
    }
    // The label holds the process type itself for every ordinary name (letters, digits, dashes).
    const processType = pod.metadata?.labels?.[LABEL.processType];
    const perProcess = processType ? (usage.processes![processType] ??= { cpuMillicores: 0, podCount: 0 }) : null;
    if (pod.status?.phase === 'Running') {
      usage.podCount += 1;
      if (perProcess) perProcess.podCount += 1;
    }
    for (const status of pod.status?.containerStatuses ?? []) usage.restartCount += status.restartCount ?? 0;
    const metric = metricByPod.get(`${pod.metadata?.namespace}/${pod.metadata?.name}`);
    for (const container of metric?.containers ?? []) {
      usage.cpuMillicores += cpuMillicores(container.usage.cpu);
      usage.memoryBytes += memoryBytes(container.usage.memory);
      // Against the container's own limit (what the kubelet kills it at), for memory alert rules.
      const limit = memoryBytes(pod.spec?.containers.find((c) => c.name === container.name)?.resources?.limits?.memory ?? '');
      if (limit > 0) usage.memoryPercentMax = Math.max(usage.memoryPercentMax ?? 0, (memoryBytes(container.usage.memory) / limit) * 100);
      if (perProcess) perProcess.cpuMillicores = (perProcess.cpuMillicores ?? 0) + cpuMillicores(container.usage.cpu);
    }
  }
  return [...byApp.values()].map((u) => ({
    ...u,
    cpuMillicores: Math.round(u.cpuMillicores),
    memoryBytes: Math.round(u.memoryBytes),
    processes: Object.fromEntries(
      Object.entries(u.processes ?? {}).map(([type, p]) => [
        type,
        { ...p, cpuMillicores: metrics === null ? null : Math.round(p.cpuMillicores ?? 0) },
      ]),
    ),
  }));
}
