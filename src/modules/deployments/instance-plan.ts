import { v7 as uuidv7 } from 'uuid';
import type { ProcessPodClasses } from '../../platform/db/schema.js';
import type { InstanceSpec, InstanceStatus } from '../../platform/runtime/port.js';
import type { DeployTarget } from './deployments.repository.js';
import { limitsOf, processEnv, type ReleaseRuntime } from './release-runtime.js';

/** `{app}.{project}.{org}.<domain>`; other environments than production add `{env}` after the app. */
export function routeHostname(t: DeployTarget, domain: string): string {
  const parts = t.isProduction ? [t.appSlug, t.projectSlug, t.orgSlug] : [t.appSlug, t.envSlug, t.projectSlug, t.orgSlug];
  return [...parts, domain].join('.').toLowerCase();
}

export function routeUrl(hostname: string, port: number): string {
  return `http://${hostname}${port === 80 ? '' : `:${port}`}`;
}

/** Only `web` instances get a port and the router's traffic (as on Heroku). */
export const isWeb = (processType: string) => processType === 'web';

export function instanceSpec(
  rt: ReleaseRuntime, target: DeployTarget, deploymentId: string, processType: string, ordinal: number, podClasses: ProcessPodClasses,
): InstanceSpec {
  return {
    id: uuidv7(),
    labels: {
      applicationId: target.applicationId, environmentId: target.environmentId, releaseId: rt.releaseId,
      deploymentId, processType, ordinal,
    },
    command: rt.processes[processType]!.cmd,
    artifactPath: rt.artifactPath,
    env: processEnv(rt, processType),
    listen: isWeb(processType),
    secrets: rt.secrets,
    limits: limitsOf(podClasses, processType),
  };
}

/** The lowest ordinals (from 1) not yet taken by `existing`, `n` of them. */
export function freeOrdinals(existing: InstanceStatus[], n: number): number[] {
  const taken = new Set(existing.map((s) => s.labels.ordinal));
  const out: number[] = [];
  for (let i = 1; out.length < n; i++) if (!taken.has(i)) out.push(i);
  return out;
}

export function describeFailure(s: InstanceStatus | undefined, healthPath: string): string {
  if (!s) return 'stopped unexpectedly';
  const name = `${s.labels.processType}.${s.labels.ordinal}`;
  const crashes = s.restartCount > 0 || s.state === 'crashed'
    ? ` (crashed ${s.restartCount + (s.state === 'crashed' ? 1 : 0)} time(s), last ${s.lastExit ?? 'exit unknown'})` : '';
  return isWeb(s.labels.processType)
    ? `${name} never answered 2xx on ${healthPath}${crashes}`
    : `${name} did not keep running${crashes}`;
}
