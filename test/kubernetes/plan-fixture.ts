/** `WorkloadPlan` objects for the Kubernetes runtime tests. */
import { v7 as uuidv7 } from 'uuid';
import type { PodResources, WorkloadPlan } from '../../src/platform/runtime/application-runtime.js';
import { POD_CLASSES, type PodClassName } from '../../src/modules/applications/pod-classes.js';

export const SECRET_VALUE = 's3cr3t-database-password-9f2c';

export function resourcesOf(podClass: PodClassName): PodResources {
  const c = POD_CLASSES[podClass];
  return {
    podClass,
    cpuRequestMillicores: c.cpu_request_m,
    cpuLimitMillicores: c.cpu_limit_m,
    memoryRequestMiB: c.memory_request_mib,
    memoryLimitMiB: c.memory_limit_mib,
  };
}

export interface PlanOptions {
  orgSlug?: string;
  projectSlug?: string;
  appSlug?: string;
  envSlug?: string;
  applicationId?: string;
  environmentId?: string;
  releaseVersion?: number;
  formation?: Record<string, number>;
  podClass?: PodClassName;
  timeoutSeconds?: number;
  healthCheckHost?: string | null;
  registryReference?: string | null;
  processes?: WorkloadPlan['processes'];
}

export function makePlan(options: PlanOptions = {}): WorkloadPlan {
  const processes = options.processes ?? {
    web: { cmd: 'busybox httpd -f -p $PORT -h /www', env: { GREETING: 'hello' } },
    worker: { cmd: 'sh -c "while true; do sleep 1; done"', env: {} },
    release: { cmd: './migrate', env: {} },
    postdeploy: { cmd: './warm-cache', env: {} },
  };
  const podClass = options.podClass ?? 'm1.large';
  const version = options.releaseVersion ?? 1;
  return {
    deploymentId: uuidv7(),
    organization: { id: uuidv7(), slug: options.orgSlug ?? 'acme' },
    project: { id: uuidv7(), slug: options.projectSlug ?? 'shop' },
    application: { id: options.applicationId ?? uuidv7(), slug: options.appSlug ?? 'api' },
    environment: { id: options.environmentId ?? uuidv7(), slug: options.envSlug ?? 'production', isProduction: true },
    release: { id: uuidv7(), version, commitSha: 'abc123' },
    image: {
      id: uuidv7(),
      version,
      repositoryName: 'acme/shop/api',
      artifactPath: null,
      registryReference:
        options.registryReference === undefined
          ? `registry.example.test/acme/shop/api@sha256:${'a'.repeat(64)}`
          : options.registryReference,
      pullCredentials: null,
    },
    processes,
    env: {
      DATABASE_URL: `postgres://app:${SECRET_VALUE}@db/app`,
      PASSWORD: SECRET_VALUE,
      LOG_LEVEL: 'log-level-chatty',
      RELEASE_NOTE: `release-note-number-${version}`,
    },
    secretNames: ['DATABASE_URL', 'PASSWORD'],
    secrets: [`postgres://app:${SECRET_VALUE}@db/app`, SECRET_VALUE],
    formation: options.formation ?? { web: 2, worker: 1 },
    resources: Object.fromEntries(Object.keys(processes).map((t) => [t, resourcesOf(podClass)])),
    healthCheck: { path: '/health', host: options.healthCheckHost === undefined ? 'api.example.test' : options.healthCheckHost },
    timeoutSeconds: options.timeoutSeconds ?? 30,
    hostname: 'api-shop.apps.example.test',
  };
}

/** The same application environment, a later deployment (a new release unless told). */
export function nextPlan(previous: WorkloadPlan, changes: Partial<WorkloadPlan> = {}): WorkloadPlan {
  return {
    ...previous,
    deploymentId: uuidv7(),
    release: { ...previous.release, id: uuidv7(), version: previous.release.version + 1 },
    ...changes,
  };
}
