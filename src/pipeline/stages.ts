/**
 * The pipeline's stages and their state machine, in one place.
 *
 * A deploy goes request → image → release → deployment → serving: each stage writes its own
 * record (a row with a status, a step, a log and an error), runs as a durable job of the
 * application's queue (one job of an application at a time), and hands its record to the next.
 * The tables below say, for every record, which states it moves between, which function moves
 * it (`writtenIn`: where the state is written; test/pipeline-stages checks the code against
 * it, and the database's CHECK constraints against `states`) and what settles it when the
 * process moving it dies (`onCrash`). docs/architecture.md draws it.
 */
import type { Selectable } from 'kysely';
import type { BuildStatus, DeploymentStatus, EnvironmentDeploysTable, RunStatus } from '../platform/db/schema.js';
import { RECONCILE_JOB } from '../platform/jobs/job-names.js';

// --- Job kinds: one per stage, plus the chain that runs build → release → deploy as one job ---

export const BUILD_JOB = 'build';
export const RELEASE_JOB = 'release';
export const DEPLOY_JOB = 'deploy';
/** `POST /applications/{id}/deploy`, a GitHub push, a preview, an environment deploy: every stage in one job. */
export const CHAIN_JOB = 'chain';
export const RUN_JOB = 'run';
/** Queued by modules below the pipeline too (a scale, an environment stopped), so its name lives in src/platform/jobs. */
export { RECONCILE_JOB };

/** The stages of a deploy, in the order they run (DeployChain.run runs the first three in one job). */
export const STAGES = [
  { stage: 'build', makes: 'image', job: BUILD_JOB, code: 'build/' },
  { stage: 'release', makes: 'release', job: RELEASE_JOB, code: 'release/' },
  { stage: 'deploy', makes: 'deployment', job: DEPLOY_JOB, code: 'deploy/' },
  // The runtime (src/platform/runtime) runs the instances; `reconcile` keeps them matching the serving deployment.
  { stage: 'serve', makes: 'running instances', job: RECONCILE_JOB, code: 'deploy/formation-reconciler.ts' },
] as const;

// --- States of each record (the database's CHECK constraints hold the same lists) ---

export const IMAGE_STATES = ['building', 'built', 'error'] as const;
export const RELEASE_STATES = ['building', 'built', 'error'] as const;
export const DEPLOYMENT_STATES = ['queued', 'deploying', 'complete', 'error', 'rolled_back'] as const;
export const RUN_STATES = ['pending', 'running', 'succeeded', 'failed', 'timed_out'] as const;
export const ENV_DEPLOY_STATES = ['deploying', 'complete', 'error'] as const;
/** Where one service of an environment deploy stands: not stored, read from its image, release and deployment. */
export const ENV_DEPLOY_SERVICE_STATES = ['queued', 'building', 'releasing', 'deploying', 'complete', 'error'] as const;

export type ImageState = (typeof IMAGE_STATES)[number];
export type ReleaseState = (typeof RELEASE_STATES)[number];
export type DeploymentState = (typeof DEPLOYMENT_STATES)[number];
export type RunState = (typeof RUN_STATES)[number];
export type EnvDeployState = (typeof ENV_DEPLOY_STATES)[number];
export type EnvDeployServiceState = (typeof ENV_DEPLOY_SERVICE_STATES)[number];

// The lists above and the database types the repositories write through must name the same states.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Holds<T extends true> = T;
export type StatesMatchTheSchema = [
  Holds<Same<ImageState, BuildStatus>>,
  Holds<Same<ReleaseState, BuildStatus>>,
  Holds<Same<DeploymentState, DeploymentStatus>>,
  Holds<Same<RunState, RunStatus>>,
  Holds<Same<EnvDeployState, Selectable<EnvironmentDeploysTable>['status']>>,
];

// --- The state machine ---

export interface Transition<S extends string> {
  /** The states it leaves; empty: the record is created in `to`. */
  from: readonly S[];
  to: S;
  /** Who makes it happen: the request, job or sweeper, and the function it calls. */
  by: string;
  /** The function that writes `to`: `<path under src/pipeline>#<function or Class.method>`. */
  writtenIn: string;
  /** Created without naming a status: `to` is the column's default. */
  columnDefault?: true;
  /** Settles a record whose worker died or whose job vanished. */
  recovery?: true;
}

export interface Lifecycle<S extends string, Busy extends S> {
  /** The glossary's word for the record (docs/glossary.md). */
  record: string;
  /** Its table; null when the state is derived from other records, never stored. */
  table: 'images' | 'releases' | 'deployments' | 'one_off_runs' | 'environment_deploys' | null;
  states: readonly S[];
  /** States in which a job or a request is still working on it. */
  inProgress: readonly Busy[];
  transitions: readonly Transition<S>[];
  /** For every state in progress: what settles the record when the process moving it dies. */
  onCrash: Record<Busy, string>;
}

const buildFailure = 'records/build-records.ts#failure';

export const IMAGE_LIFECYCLE: Lifecycle<ImageState, 'building'> = {
  record: 'image',
  table: 'images',
  states: IMAGE_STATES,
  inProgress: ['building'],
  transitions: [
    {
      from: [],
      to: 'building',
      by: 'ImagesService.createImage: POST /applications/{id}/builds, and the chain (deploy, GitHub push, preview, environment deploy)',
      writtenIn: 'build/images.repository.ts#ImagesRepository.insertNext',
    },
    {
      from: ['building'],
      to: 'built',
      by: 'the `build` job, or the `chain` job: BuildRunner.run',
      writtenIn: 'build/build-runner.ts#BuildRunner.run',
    },
    {
      from: ['building'],
      to: 'error',
      by: 'BuildRunner.run: fetching, building or exporting failed, or timed out',
      writtenIn: 'build/build-runner.ts#BuildRunner.run',
    },
    {
      from: ['building'],
      to: 'error',
      by: "ImagesService.failInterrupted: the `build` or `chain` job's onInterrupted (its worker died), or the chain could not be queued",
      writtenIn: buildFailure,
      recovery: true,
    },
    {
      from: ['building'],
      to: 'error',
      by: 'the images sweeper (ImagesService.registerJobs → settleAbandoned): building, its job gone, older than 120 s',
      writtenIn: buildFailure,
      recovery: true,
    },
  ],
  onCrash: {
    building:
      "the job's onInterrupted fails it (`interrupted`) and removes its work directory; an image whose job vanished is failed by the sweeper (`abandoned`)",
  },
};

export const RELEASE_LIFECYCLE: Lifecycle<ReleaseState, 'building'> = {
  record: 'release',
  table: 'releases',
  states: RELEASE_STATES,
  inProgress: ['building'],
  transitions: [
    {
      from: [],
      to: 'building',
      by: 'ReleasesService.createRelease: POST /applications/{id}/releases, and the chain once its image is built',
      writtenIn: 'release/releases.repository.ts#ReleasesRepository.insertNext',
    },
    {
      from: [],
      to: 'built',
      by: 'ReleasePromoter.promote: a promotion copies a built release (image and frozen configuration) into the target environment',
      writtenIn: 'release/promotion.ts#ReleasePromoter.promote',
    },
    {
      from: ['building'],
      to: 'built',
      by: 'the `release` job, or the `chain` job: ReleaseRunner.run freezes image, configuration and process settings',
      writtenIn: 'release/release-runner.ts#ReleaseRunner.run',
    },
    {
      from: ['building'],
      to: 'error',
      by: 'ReleaseRunner.run: no built image, or freezing failed',
      writtenIn: 'release/release-runner.ts#ReleaseRunner.run',
    },
    {
      from: ['building'],
      to: 'error',
      by: "ReleasesService.failInterrupted / failInterruptedOfJob: the `release` or `chain` job's onInterrupted",
      writtenIn: buildFailure,
      recovery: true,
    },
    {
      from: ['building'],
      to: 'error',
      by: 'the releases sweeper (ReleasesService.registerJobs → settleAbandoned): building, its job gone, older than 120 s',
      writtenIn: buildFailure,
      recovery: true,
    },
  ],
  onCrash: {
    building: "the job's onInterrupted fails it (`interrupted`); a release whose job vanished is failed by the sweeper (`abandoned`)",
  },
};

export const DEPLOYMENT_LIFECYCLE: Lifecycle<DeploymentState, 'queued' | 'deploying'> = {
  record: 'deployment',
  table: 'deployments',
  states: DEPLOYMENT_STATES,
  inProgress: ['queued', 'deploying'],
  transitions: [
    {
      from: [],
      to: 'queued',
      by: 'DeploymentsService.queue (deploy a release, rollback, promotion, guarded rollback) and DeployChain.run once its release is built',
      writtenIn: 'deploy/deployments.repository.ts#DeploymentsRepository.insert',
    },
    {
      from: ['queued'],
      to: 'deploying',
      by: 'the `deploy` job, or the `chain` job: DeployRunner.run',
      writtenIn: 'deploy/deploy-runner.ts#DeployRunner.run',
    },
    {
      from: ['deploying'],
      to: 'complete',
      by: 'DeployRunner.run: release command, rollout, health checks and postdeploy passed; the new release serves',
      writtenIn: 'deploy/deploy-runner.ts#DeployRunner.run',
    },
    {
      from: ['queued', 'deploying'],
      to: 'error',
      by: 'DeployRunner.run: a step failed; the previous release is reconciled back first, so a settled deployment means a settled environment',
      writtenIn: 'deploy/deployments.repository.ts#DeploymentsRepository.failIfUnfinished',
    },
    {
      from: ['queued', 'deploying'],
      to: 'error',
      by: "settleInterrupted: the `deploy` or `chain` job's onInterrupted, or the job aborted by a stopping worker",
      writtenIn: 'deploy/deployments.repository.ts#DeploymentsRepository.failIfUnfinished',
      recovery: true,
    },
    {
      from: ['complete'],
      to: 'rolled_back',
      by: 'DeploymentsService.rollBackBreached: the guard watcher (modules/guards) saw the guarded rollout breach its limits and queued the rollback',
      writtenIn: 'deploy/deployments.repository.ts#DeploymentsRepository.markRolledBack',
    },
  ],
  onCrash: {
    queued:
      "the job's onInterrupted fails it (`interrupted`); a deployment whose job could not be queued stays queued (nothing sweeps it; it serves nothing)",
    deploying:
      "the job's onInterrupted fails it (`interrupted`); local instances died with the worker and the `reconcile` queued at the next start brings the serving release back; on a cluster a `reconcile` is queued at once",
  },
};

export const RUN_LIFECYCLE: Lifecycle<RunState, 'pending' | 'running'> = {
  record: 'one-off run',
  table: 'one_off_runs',
  states: RUN_STATES,
  inProgress: ['pending', 'running'],
  transitions: [
    {
      from: [],
      to: 'pending',
      by: 'OneOffRunsService.create: POST /applications/{id}/runs, in the serving release',
      writtenIn: 'run/one-off-runs.repository.ts#OneOffRunsRepository.insert',
      columnDefault: true,
    },
    {
      from: [],
      to: 'pending',
      by: 'OneOffRunsService.createScheduled: the cron scheduler (modules/cron), one run per occurrence',
      writtenIn: 'run/one-off-runs.repository.ts#OneOffRunsRepository.insertScheduled',
      columnDefault: true,
    },
    { from: ['pending'], to: 'running', by: 'the `run` job: OneOffRunner.run', writtenIn: 'run/one-off-runner.ts#OneOffRunner.run' },
    { from: ['running'], to: 'succeeded', by: 'OneOffRunner.run: exit code 0', writtenIn: 'run/one-off-runner.ts#OneOffRunner.run' },
    {
      from: ['running'],
      to: 'failed',
      by: 'OneOffRunner.run: another exit code or a signal',
      writtenIn: 'run/one-off-runner.ts#OneOffRunner.run',
    },
    {
      from: ['running'],
      to: 'timed_out',
      by: 'OneOffRunner.run: killed at its timeout',
      writtenIn: 'run/one-off-runner.ts#OneOffRunner.run',
    },
    {
      from: ['pending'],
      to: 'running',
      by: 'AttachedRuns.run: POST /applications/{id}/runs/attach, run in the server process with its standard streams',
      writtenIn: 'run/attached-runs.ts#AttachedRuns.run',
    },
    {
      from: ['running'],
      to: 'succeeded',
      by: 'AttachedRuns.run: exit code 0',
      writtenIn: 'run/attached-runs.ts#AttachedRuns.run',
    },
    {
      from: ['running'],
      to: 'failed',
      by: 'AttachedRuns.run: another exit code or a signal',
      writtenIn: 'run/attached-runs.ts#AttachedRuns.run',
    },
    {
      from: ['running'],
      to: 'timed_out',
      by: 'AttachedRuns.run: killed at its timeout',
      writtenIn: 'run/attached-runs.ts#AttachedRuns.run',
    },
    {
      from: ['pending', 'running'],
      to: 'failed',
      by: 'AttachedRuns.run: it could not start',
      writtenIn: 'run/attached-runs.ts#AttachedRuns.run',
    },
    {
      from: ['pending', 'running'],
      to: 'failed',
      by: 'OneOffRunner.run: it could not start; OneOffRunsService.createScheduled: it could not be queued',
      writtenIn: 'run/one-off-runs.repository.ts#OneOffRunsRepository.failIfUnfinished',
    },
    {
      from: ['pending', 'running'],
      to: 'failed',
      by: "the `run` job's onInterrupted (a one-off is never run twice on its own); a scheduled run never queued, at its entry's next occurrence",
      writtenIn: 'run/one-off-runs.repository.ts#OneOffRunsRepository.failIfUnfinished',
      recovery: true,
    },
  ],
  onCrash: {
    pending:
      "the job's onInterrupted fails it (`interrupted`); a scheduled run never queued is failed at its entry's next occurrence (after a minute); a requested run whose job could not be queued stays pending",
    running: "the job's onInterrupted fails it (`interrupted`): never retried, it may have had side effects",
  },
};

export const ENV_DEPLOY_LIFECYCLE: Lifecycle<EnvDeployState, 'deploying'> = {
  record: 'environment deploy',
  table: 'environment_deploys',
  states: ENV_DEPLOY_STATES,
  inProgress: ['deploying'],
  transitions: [
    {
      from: [],
      to: 'deploying',
      by: 'EnvDeploysService.deploy (a chain per service) and EnvDeploysService.promote (a promoted release and its deployment per service)',
      writtenIn: 'env-deploys/env-deploys.repository.ts#EnvDeploysRepository.insert',
      columnDefault: true,
    },
    {
      from: ['deploying'],
      to: 'complete',
      by: "EnvDeploysService.refresh, on every read: every service's deployment is complete",
      writtenIn: 'env-deploys/env-deploys.service.ts#EnvDeploysService.refresh',
    },
    {
      from: ['deploying'],
      to: 'error',
      by: "EnvDeploysService.refresh, on every read: a service's build, release or deployment failed (or could not start)",
      writtenIn: 'env-deploys/env-deploys.service.ts#EnvDeploysService.refresh',
    },
  ],
  onCrash: {
    deploying: "nothing runs it: it is read from its services' records, so it settles when they do (each recovered as above)",
  },
};

const serviceState = 'env-deploys/env-deploys.service.ts#serviceState';

export const ENV_DEPLOY_SERVICE_LIFECYCLE: Lifecycle<EnvDeployServiceState, 'queued' | 'building' | 'releasing' | 'deploying'> = {
  record: 'environment deploy service',
  table: null,
  states: ENV_DEPLOY_SERVICE_STATES,
  inProgress: ['queued', 'building', 'releasing', 'deploying'],
  transitions: [
    { from: [], to: 'queued', by: 'serviceState: no image yet', writtenIn: serviceState },
    { from: ['queued'], to: 'building', by: 'serviceState: its image is building', writtenIn: serviceState },
    { from: ['building'], to: 'releasing', by: 'serviceState: its image is built, or its release is building', writtenIn: serviceState },
    {
      from: ['releasing'],
      to: 'deploying',
      by: 'serviceState: its release is built, or its deployment is in progress',
      writtenIn: serviceState,
    },
    { from: ['deploying'], to: 'complete', by: 'serviceState: its deployment is complete', writtenIn: serviceState },
    {
      from: ['queued', 'building', 'releasing', 'deploying'],
      to: 'error',
      by: 'serviceState: its build, release or deployment failed, or its pipeline could not start',
      writtenIn: serviceState,
    },
  ],
  onCrash: {
    queued: 'derived from its records: nothing to settle',
    building: 'derived: the image is settled as above',
    releasing: 'derived: the release is settled as above',
    deploying: 'derived: the deployment is settled as above',
  },
};

/** Every record's lifecycle, in the order of the stages (a one-off run and an environment deploy beside them). */
export const LIFECYCLES: readonly Lifecycle<string, string>[] = [
  IMAGE_LIFECYCLE,
  RELEASE_LIFECYCLE,
  DEPLOYMENT_LIFECYCLE,
  RUN_LIFECYCLE,
  ENV_DEPLOY_LIFECYCLE,
  ENV_DEPLOY_SERVICE_LIFECYCLE,
];
