/**
 * Ancla's pipeline view over Slipway's records: Ancla reports a build and a deploy, each
 * `success`, `error` or in progress, where Slipway has an image, a release and a deployment.
 * Ancla's CLI waits for the build's `success`, then for the deploy's: so the deploy stage must
 * not read `success` from an older deployment while a newer build is still on its way to the
 * environment (a release not yet made, or made and not yet deployed).
 * The status words come from the adapter's one vocabulary (vocabulary.ts).
 */
import { anclaBuildStatus, anclaDeployStatus } from './vocabulary.js';

interface StageView {
  status: string;
  error_detail: string | null;
  updated: string;
}

const newer = (a: StageView | null, b: StageView | null) => a !== null && (b === null || Date.parse(a.updated) > Date.parse(b.updated));

/** `{build, deploy}` as Ancla's clients read them, from `PipelineService.status` of one service in one environment. */
export function toAnclaPipelineStatus(status: { build: StageView | null; release: StageView | null; deploy: StageView | null }) {
  const { build, release, deploy } = status;
  const stage = (s: string, detail: string | null) => ({ status: s, error_detail: detail });
  let deployStage: { status: string; error_detail: string | null } | null = null;
  if (release && newer(release, deploy)) {
    // A release newer than the last deployment: being made, failed, or made and waiting for its deployment.
    deployStage =
      release.status === 'error'
        ? stage('error', release.error_detail)
        : stage(release.status === 'building' ? 'in_progress' : 'pending', null);
  } else if (build && build.status === 'built' && newer(build, deploy) && newer(build, release)) {
    // A build finished after the environment's last release and deployment: not deployed here (yet).
    deployStage = stage('pending', null);
  } else if (deploy) {
    deployStage = stage(anclaDeployStatus(deploy.status), deploy.error_detail);
  }
  return {
    build: build ? stage(anclaBuildStatus(build.status), build.error_detail) : null,
    deploy: deployStage,
  };
}

/** A deployment summary (`DeploymentsService.list` / `.rollback`) as one of Ancla's deploys. */
export function toAnclaDeploy(d: {
  id: string;
  release: { version: number | null; commit_sha: string | null };
  status: string;
  complete: boolean;
  error: boolean;
  error_detail: string | null;
  is_rollback: boolean;
  job_id: string | null;
  created: string;
  updated: string;
}) {
  return {
    id: d.id,
    version: d.release.version,
    commit_sha: d.release.commit_sha,
    status: anclaDeployStatus(d.status),
    complete: d.complete,
    error: d.error,
    error_detail: d.error_detail,
    rollback: d.is_rollback,
    job_id: d.job_id,
    created: d.created,
    updated: d.updated,
  };
}

/** An environment deploy's view (`EnvDeploysService.deploy` / `.promote`) in Ancla's words. */
export function toAnclaRun(run: {
  id: string;
  environment: string;
  from: string | null;
  status: string;
  error_detail: string | null;
  services: Array<{
    service: string;
    image_id: string | null;
    release_id: string | null;
    deployment_id: string | null;
    status: string;
    error_detail: string | null;
  }>;
  created: string;
}) {
  return {
    id: run.id,
    environment: run.environment,
    from: run.from,
    status: anclaDeployStatus(run.status),
    error_detail: run.error_detail,
    services: run.services.map((s) => ({
      service: s.service,
      build_id: s.image_id,
      release_id: s.release_id,
      deploy_id: s.deployment_id,
      status: anclaDeployStatus(s.status),
      error_detail: s.error_detail,
    })),
    created: run.created,
  };
}
