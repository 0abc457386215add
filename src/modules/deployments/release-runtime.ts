import type { SecretBox } from '../../platform/crypto/secret-box.js';
import type { ProcessCounts, ProcessDefinitions, ProcessPodClasses } from '../../platform/db/schema.js';
import { podClassOf } from '../applications/pod-classes.js';
import type { InstanceLimits } from '../../platform/runtime/port.js';
import { openConfiguration, type DisplayedVariable } from '../releases/release-freezer.js';

/** Process types run once per deployment, never as long-running instances. */
const ONE_OFF_PROCESSES = new Set(['release', 'postdeploy']);

/** What running a release needs: its command lines, frozen environment and artifact. */
export interface ReleaseRuntime {
  releaseId: string;
  version: number;
  artifactPath: string;
  processes: ProcessDefinitions;
  /** The frozen configuration, plain: only ever handed to processes. */
  env: Record<string, string>;
  /** Values to scrub from every output (the secret variables' values). */
  secrets: string[];
  healthCheckPath: string;
  healthCheckHost: string | null;
  timeoutSeconds: number;
}

type ReleaseRow = {
  id: string; version: number; processes: ProcessDefinitions | null; configuration: unknown; configuration_sealed: string | null;
  health_check_path: string; health_check_host: string | null; deployment_timeout: number;
};

export function releaseRuntime(
  secrets: SecretBox,
  release: ReleaseRow,
  image: { artifact_path: string | null; processes: ProcessDefinitions | null },
): ReleaseRuntime {
  if (!image.artifact_path) throw new Error(`The image of release v${release.version} has no built artifact`);
  const env = openConfiguration(secrets, release.configuration_sealed);
  const secretSet = new Set(((release.configuration ?? []) as DisplayedVariable[]).filter((v) => v.secret).map((v) => v.name));
  return {
    releaseId: release.id,
    version: release.version,
    artifactPath: image.artifact_path,
    processes: release.processes ?? image.processes ?? {},
    env,
    secrets: Object.entries(env).filter(([k]) => secretSet.has(k)).map(([, v]) => v),
    healthCheckPath: release.health_check_path || '/',
    healthCheckHost: release.health_check_host,
    timeoutSeconds: release.deployment_timeout,
  };
}

/**
 * How many instances of each long-running process type to run: the current settings,
 * `web` 1 when unset, other types 0 when unset (as on Heroku: workers are scaled up).
 */
export function formation(processes: ProcessDefinitions, counts: ProcessCounts): Record<string, number> {
  const result: Record<string, number> = {};
  for (const type of Object.keys(processes)) {
    if (ONE_OFF_PROCESSES.has(type)) continue;
    result[type] = counts[type] ?? (type === 'web' ? 1 : 0);
  }
  return result;
}

export function limitsOf(podClasses: ProcessPodClasses, processType: string): InstanceLimits {
  const pc = podClassOf(podClasses, processType);
  return { cpuMillicores: pc.cpu_limit_m, memoryBytes: pc.memory_limit_mib * 1024 * 1024 };
}

/** The environment of one process: the frozen configuration, then the Procfile entry's own. */
export function processEnv(rt: ReleaseRuntime, processType: string): Record<string, string> {
  return { ...rt.env, ...(rt.processes[processType]?.env ?? {}) };
}
