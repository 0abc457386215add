import { anclaStatus, buildStatus, deployLogStatus, deployStatus } from './vocabulary.js';

/**
 * Ancla's services family over Slipway's records: pure reshaping, no lookups. A service is an
 * application seen in one environment, a build an image, a deploy a deployment.
 */

/** An application (`ApplicationsService.describe`) in an environment, with its process counts there. */
export function toService(
  app: {
    id: string;
    name: string;
    slug: string;
    platform: string;
    github_repository: string | null;
    auto_deploy_branch: string | null;
    created: string;
    updated: string;
  },
  environment: string,
  processCounts: Record<string, number>,
) {
  return {
    id: app.id,
    name: app.name,
    slug: app.slug,
    platform: app.platform,
    environment,
    github_repository: app.github_repository ?? '',
    auto_deploy_branch: app.auto_deploy_branch ?? '',
    process_counts: processCounts,
    created: app.created,
    updated: app.updated,
  };
}

interface ImageSummary {
  id: string;
  version: number;
  built: boolean;
  error: boolean;
  created: string;
  updated: string;
}

const imageStatus = (i: { built: boolean; error: boolean }) => (i.error ? 'error' : i.built ? 'built' : 'building');

/** An image (`ImagesService.list` item or `.detail`) as a build. */
export function toBuild(image: ImageSummary) {
  return {
    id: image.id,
    version: image.version,
    status: buildStatus(imageStatus(image)),
    built: image.built,
    error: image.error,
    created: image.created,
    updated: image.updated,
  };
}

export function toBuildDetail(
  image: ImageSummary & { error_detail: string | null; commit_sha: string | null; build_ref: string | null; job_id?: string | null },
) {
  return {
    ...toBuild(image),
    error_detail: image.error_detail ?? '',
    commit_sha: image.commit_sha ?? '',
    build_ref: image.build_ref ?? '',
    job_id: image.job_id ?? '',
  };
}

/** An image and its log (`ImagesService.log`) as a build log. */
export function toBuildLog(image: ImageSummary, log: { status: string; log_text: string; error_detail: string | null }) {
  return { ...toBuild(image), status: buildStatus(log.status), log_text: log.log_text, error_detail: log.error_detail ?? '' };
}

interface DeploymentSummary {
  id: string;
  environment: string;
  release: { version: number };
  status: string;
  complete: boolean;
  error: boolean;
  error_detail: string | null;
  job_id: string | null;
  created: string;
  updated: string;
}

/** A deployment (`DeploymentsService.list` item or `.detail`) as a deploy. */
export function toDeploy(d: DeploymentSummary) {
  return {
    id: d.id,
    status: deployStatus(d.status),
    complete: d.complete,
    error: d.error,
    error_detail: d.error_detail ?? '',
    job_id: d.job_id ?? '',
    release_version: d.release.version,
    environment: d.environment,
    created: d.created,
    updated: d.updated,
  };
}

/** A deployment's log (`DeploymentsService.log`) as a deploy log. */
export function toDeployLog(log: { status: string; log_text: string; error: boolean; error_detail: string | null }) {
  return { status: deployLogStatus(log.status), log_text: log.log_text, error: log.error, error_detail: log.error_detail ?? '' };
}

/**
 * A deployment seen as a one-service environment deploy: Ancla's CLI reads the deploys it lists
 * for a service (deployments) through the environment's `deploys/{id}` routes.
 */
export function deploymentAsEnvDeploy(d: DeploymentSummary & { application_slug: string; release: { id: string; version: number } }) {
  const status = deployLogStatus(d.status);
  return {
    id: d.id,
    environment: d.environment,
    kind: 'deploy' as const,
    from: null,
    services: [
      {
        service: d.application_slug,
        deployment_id: d.id,
        image_id: null,
        release_id: d.release.id,
        job_id: d.job_id,
        status,
        error_detail: d.error_detail,
      },
    ],
    status,
    complete: d.complete,
    error: d.error,
    error_detail: d.error_detail,
    job_id: d.job_id,
    created: d.created,
    updated: d.updated,
  };
}

type Stage = { id: string; version: number | null; status: string; error_detail: string | null; updated: string } | null;

/** `PipelineService.status` in Ancla's words. */
export function toPipelineStatus(status: { build: Stage; release: Stage; deploy: Stage }) {
  const stage = (s: Stage) =>
    s && { id: s.id, version: s.version, status: anclaStatus(s.status), error_detail: s.error_detail ?? '', updated: s.updated };
  return { build: stage(status.build), release: stage(status.release), deploy: stage(status.deploy) };
}
