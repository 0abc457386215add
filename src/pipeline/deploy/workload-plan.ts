import type { Db } from '../../platform/db/database.js';
import type { SecretBox } from '../../platform/crypto/secret-box.js';
import type { ProcessCounts, ProcessDefinitions } from '../../platform/db/schema.js';
import type { PodResources, WorkloadPlan } from '../../platform/runtime/application-runtime.js';
import { podClassOf, DEFAULT_POD_CLASS } from '../../modules/applications/index.js';
import { effectiveProcessSettings } from '../../modules/environments/index.js';
import { openConfiguration, type DisplayedVariable } from '../release/release-freezer.js';
import type { DeployTarget, DeploymentsRepository } from './deployments.repository.js';
import { planVolumes } from '../../platform/volumes/index.js';
import { routeHostname } from '../../platform/edge/route-hostname.js';

/** Process types run once per deployment, never as long-running instances. */
const ONE_OFF_PROCESSES = new Set(['release', 'postdeploy']);

type ReleaseRow = NonNullable<Awaited<ReturnType<DeploymentsRepository['release']>>>;
type ImageRow = NonNullable<Awaited<ReturnType<DeploymentsRepository['image']>>>;

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

// The naming scheme lives with the edge that serves it (custom domains route to these names too).
export { routeHostname };

/** The pushed image pinned by its manifest digest (`host/repo@sha256:…`), or null when never pushed. */
function registryReference(image: ImageRow): string | null {
  const meta = (image.image_metadata ?? {}) as { registry_reference?: unknown; manifest_digest?: unknown };
  if (typeof meta.registry_reference !== 'string' || typeof meta.manifest_digest !== 'string') return null;
  const untagged = meta.registry_reference.replace(/:[^/:]+$/, '');
  return `${untagged}@${meta.manifest_digest}`;
}

/** The sealed credentials an image deploy gave for another registry, opened (never for the platform's own). */
function pullCredentials(secrets: SecretBox, image: ImageRow): WorkloadPlan['image']['pullCredentials'] {
  if (!image.source_image || !image.source_credentials) return null;
  const host = image.source_image.slice(0, image.source_image.indexOf('/'));
  const { username, password } = JSON.parse(secrets.open(image.source_credentials)) as { username: string; password: string };
  return { host, username, password };
}

function resourcesOf(podClasses: Record<string, string>, processType: string): PodResources {
  const pc = podClassOf(podClasses, processType);
  return {
    podClass: podClasses[processType] ?? DEFAULT_POD_CLASS,
    cpuRequestMillicores: pc.cpu_request_m,
    cpuLimitMillicores: pc.cpu_limit_m,
    memoryRequestMiB: pc.memory_request_mib,
    memoryLimitMiB: pc.memory_limit_mib,
  };
}

/**
 * Everything a runtime needs to run `deploymentId` (a deployment of `release`) in the
 * target environment: the frozen configuration opened, the image, the current process
 * counts and pod classes of the environment.
 */
export async function workloadPlan(
  db: Db,
  secrets: SecretBox,
  deploymentId: string,
  release: ReleaseRow,
  image: ImageRow,
  target: DeployTarget,
  routerDomain: string,
): Promise<WorkloadPlan> {
  const env = openConfiguration(secrets, release.configuration_sealed);
  const secretNames = ((release.configuration ?? []) as DisplayedVariable[]).filter((v) => v.secret).map((v) => v.name);
  const processes = release.processes ?? image.processes ?? {};
  const settings = await effectiveProcessSettings(db, target.applicationId, target.environmentId);
  const pull = pullCredentials(secrets, image);
  return {
    deploymentId,
    organization: { id: target.organizationId, slug: target.orgSlug },
    project: { id: target.projectId, slug: target.projectSlug },
    application: { id: target.applicationId, slug: target.appSlug },
    environment: { id: target.environmentId, slug: target.envSlug, isProduction: target.isProduction },
    release: { id: release.id, version: release.version, commitSha: release.commit_sha },
    image: {
      id: image.id,
      version: image.version,
      repositoryName: image.repository_name,
      artifactPath: image.artifact_path,
      registryReference: registryReference(image),
      pullCredentials: pull,
    },
    processes,
    env,
    secretNames,
    secrets: [
      ...Object.entries(env)
        .filter(([k]) => secretNames.includes(k))
        .map(([, v]) => v),
      ...(pull ? [pull.password] : []),
    ],
    formation: formation(processes, settings.process_counts),
    resources: Object.fromEntries(Object.keys(processes).map((type) => [type, resourcesOf(settings.process_pod_classes, type)])),
    healthCheck: { path: release.health_check_path || '/', host: release.health_check_host },
    timeoutSeconds: release.deployment_timeout,
    hostname: routeHostname(target, routerDomain),
    customDomains: (
      await db
        .selectFrom('domains')
        .select('hostname')
        .where('application_id', '=', target.applicationId)
        .where('environment_id', '=', target.environmentId)
        .where('verified_at', 'is not', null)
        .orderBy('hostname')
        .execute()
    ).map((d) => d.hostname),
    volumes: await planVolumes(db, target.applicationId, target.environmentId),
  };
}
