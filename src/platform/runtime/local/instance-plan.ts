import type { FailureCode } from '../../failures.js';
import { v7 as uuidv7 } from 'uuid';
import type { PodResources, WorkloadPlan } from '../application-runtime.js';
import type { InstanceLimits, InstanceSpec, InstanceStatus } from '../port.js';

/** Only `web` instances get a port and the router's traffic (as on Heroku). */
export const isWeb = (processType: string) => processType === 'web';

export function routeUrl(hostname: string, port: number): string {
  return `http://${hostname}${port === 80 ? '' : `:${port}`}`;
}

/** The environment of one process: the frozen configuration, then the Procfile entry's own. */
export function processEnv(plan: WorkloadPlan, processType: string): Record<string, string> {
  return { ...plan.env, ...(plan.processes[processType]?.env ?? {}) };
}

/** One instance of a process type of the plan's release, ready for the local driver. */
export function instanceSpec(plan: WorkloadPlan, artifactPath: string, processType: string, ordinal: number): InstanceSpec {
  const resources = plan.resources[processType];
  return {
    id: uuidv7(),
    labels: {
      applicationId: plan.application.id,
      environmentId: plan.environment.id,
      releaseId: plan.release.id,
      deploymentId: plan.deploymentId,
      processType,
      ordinal,
    },
    command: plan.processes[processType]!.cmd,
    artifactPath,
    env: processEnv(plan, processType),
    listen: isWeb(processType),
    secrets: plan.secrets,
    ...(resources ? { limits: limitsOf(resources) } : {}),
  };
}

/** The pod class's limits as the driver applies them. */
export function limitsOf(resources: PodResources): InstanceLimits {
  return { cpuMillicores: resources.cpuLimitMillicores, memoryBytes: resources.memoryLimitMiB * 1024 * 1024, podClass: resources.podClass };
}

/** The lowest ordinals (from 1) not yet taken by `existing`, `n` of them. */
export function freeOrdinals(existing: InstanceStatus[], n: number): number[] {
  const taken = new Set(existing.map((s) => s.labels.ordinal));
  const out: number[] = [];
  for (let i = 1; out.length < n; i++) if (!taken.has(i)) out.push(i);
  return out;
}

/** A failed rollout's code: instances that crashed are a crash loop; web instances that ran but never answered failed the health check. */
export function rolloutFailureCode(statuses: Array<InstanceStatus | undefined>): FailureCode {
  const crashed = statuses.some((s) => !s || s.restartCount > 0 || s.state === 'crashed');
  return crashed ? 'crash_loop' : 'health_check_failed';
}

export function describeFailure(s: InstanceStatus | undefined, healthPath: string): string {
  if (!s) return 'stopped unexpectedly';
  const name = `${s.labels.processType}.${s.labels.ordinal}`;
  const crashes =
    s.restartCount > 0 || s.state === 'crashed'
      ? ` (crashed ${s.restartCount + (s.state === 'crashed' ? 1 : 0)} time(s), last ${s.lastExit ?? 'exit unknown'})`
      : '';
  return isWeb(s.labels.processType) ? `${name} never answered 2xx on ${healthPath}${crashes}` : `${name} did not keep running${crashes}`;
}
