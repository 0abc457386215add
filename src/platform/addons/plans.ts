import type { AddonKind } from '../db/schema.js';

/** What a plan gives an add-on: its control group's memory and CPU, and the server's own limits. */
export interface AddonPlan {
  name: string;
  memoryMiB: number;
  cpuMillicores: number;
  /** Postgres: max_connections; Redis: maxclients. */
  connections: number;
  /** Postgres: shared_buffers (small: idle memory is what most add-ons cost). */
  sharedBuffersMiB?: number;
  /** Redis: maxmemory, below the control group's limit so Redis refuses writes before the kernel kills it. */
  maxmemoryMiB?: number;
  /** The volume a cluster gives its data (Kubernetes: the PersistentVolumeClaim's size). */
  storageGiB: number;
}

export const ADDON_PLANS: Record<AddonKind, AddonPlan[]> = {
  postgres: [
    { name: 'hobby', memoryMiB: 256, cpuMillicores: 500, connections: 20, sharedBuffersMiB: 16, storageGiB: 1 },
    { name: 'standard', memoryMiB: 1024, cpuMillicores: 1000, connections: 100, sharedBuffersMiB: 128, storageGiB: 10 },
  ],
  redis: [
    { name: 'hobby', memoryMiB: 64, cpuMillicores: 250, connections: 100, maxmemoryMiB: 48, storageGiB: 1 },
    { name: 'standard', memoryMiB: 256, cpuMillicores: 500, connections: 1000, maxmemoryMiB: 200, storageGiB: 2 },
  ],
};

export function findPlan(kind: AddonKind, name: string): AddonPlan | undefined {
  return ADDON_PLANS[kind].find((p) => p.name === name);
}
