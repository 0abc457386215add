import { existsSync } from 'node:fs';
import { v7 as uuidv7 } from 'uuid';
import { chosenEnvironmentId } from './environment-choice.js';
import type { AppContext } from '../../platform/context.js';
import type { PipelineStep } from '../../platform/db/schema.js';
import { AppError, conflict, notFound } from '../../platform/errors.js';
import { iso, isoOrNull, paginate, type PaginatedEnvironmentQuery } from '../../platform/http/schemas.js';
import { requireJobRoom, requireJobs } from '../../platform/jobs/require-jobs.js';
import { queueReasons } from './queue-reasons.js';
import type { ApplicationsService } from '../../modules/applications/index.js';
import { requireDeployAccess } from '../../platform/access/environment-protection.js';
import { environmentFilter, RECONCILE_JOB } from '../records/index.js';
import { DeploymentsRepository } from './deployments.repository.js';
import { DEPLOY_JOB } from '../stages.js';
import { restoreOffers } from './restore-offers.js';
import type { DeployDiagnosis } from '../../platform/runtime/diagnosis.js';

/** An image a deployment can still run: not garbage-collected, and pushed to the registry or its artifact still on disk. */
function imageAvailable(image: {
  artifact_path: string | null;
  image_metadata: Record<string, unknown> | null;
  collected_at: Date | null;
}): boolean {
  if (image.collected_at) return false;
  if (typeof image.image_metadata?.manifest_digest === 'string') return true;
  return image.artifact_path !== null && existsSync(image.artifact_path);
}

type DeploymentWithRelease = NonNullable<Awaited<ReturnType<DeploymentsRepository['withRelease']>>>;

/** Log statuses of decisions.md: a queued deployment reads `deploying` (with `started` null). */
export const deploymentLogStatus = (status: string) =>
  (status === 'queued' ? 'deploying' : status) as 'deploying' | 'complete' | 'error' | 'rolled_back';

export { DEPLOY_JOB } from '../stages.js';
// Queued by other modules too, so its name lives in src/platform/jobs; re-exported here.
export { RECONCILE_JOB } from '../records/index.js';

function summary(d: DeploymentWithRelease, reasons?: Map<string, string>) {
  return {
    id: d.id,
    application_id: d.application_id,
    environment_id: d.environment_id,
    environment: d.environment,
    release: { id: d.release_id, version: d.release_version, commit_sha: d.release_commit_sha },
    status: deploymentLogStatus(d.status),
    complete: d.complete,
    error: d.error,
    error_detail: d.error_detail,
    error_code: d.error_code,
    failure: (d.failure ?? null) as DeployDiagnosis | null,
    deploy_metadata: d.deploy_metadata,
    deploy_step: d.deploy_step as PipelineStep | null,
    job_id: d.job_id,
    queue_reason: d.status === 'queued' && d.job_id ? (reasons?.get(d.job_id) ?? null) : null,
    is_rollback: d.rollback_of !== null,
    rollback_of: d.rollback_of,
    guard: d.guard_status
      ? {
          status: d.guard_status,
          watch_until: iso(d.guard_watch_until!),
          settings: d.guard_settings!,
          measures: d.guard_measures,
          breach: d.guard_breach,
          rollback_deployment_id: d.guard_rollback_deployment_id,
        }
      : null,
    started: isoOrNull(d.started_at),
    finished: isoOrNull(d.finished_at),
    created: iso(d.created_at),
    updated: iso(d.updated_at),
  };
}

/** The API side of deployments: queue them, list and show them. Workers run them (DeployRunner). */
export class DeploymentsService {
  readonly repo: DeploymentsRepository;

  constructor(
    private readonly ctx: AppContext,
    repo: DeploymentsRepository,
    private readonly apps: ApplicationsService,
  ) {
    this.repo = repo;
  }
  /** The release an environment serves (its latest complete deployment's), or null. */
  async currentRelease(applicationId: string, environmentId: string): Promise<{ id: string; version: number } | null> {
    const current = await this.repo.current(applicationId, environmentId);
    if (!current) return null;
    const release = await this.repo.release(current.release_id);
    return release ? { id: release.id, version: release.version } : null;
  }

  /** The image of the release serving an environment (what a configuration release runs on), or null. */
  async servingImage(applicationId: string, environmentId: string): Promise<string | null> {
    const current = await this.repo.current(applicationId, environmentId);
    const release = current ? await this.repo.release(current.release_id) : undefined;
    return release?.image_ref ?? null;
  }

  /** Where an application environment deploys (null when either is gone): the names its domains serve. */
  target(applicationId: string, environmentId: string) {
    return this.repo.target(applicationId, environmentId);
  }

  /** Queues a deployment of a release (behind the application's earlier pipeline jobs). */
  async deployRelease(userId: string, releaseId: string) {
    const release = await this.repo.release(releaseId);
    if (!release) throw notFound('Release');
    await this.apps.authorize(userId, release.application_id);
    await requireDeployAccess(this.ctx.db, userId, release.environment_id);
    if (release.error) throw conflict(`Release v${release.version} failed to build and cannot be deployed`);
    const image = release.image_ref ? await this.repo.image(release.image_ref) : undefined;
    if (image?.collected_at) throw this.collected(release.version);
    return this.queue(release.application_id, release.environment_id, release.id);
  }

  private collected(version: number) {
    return conflict(
      `The image of release v${version} was garbage-collected (only the last ${this.ctx.config.RELEASES_KEPT_PER_ENVIRONMENT} ` +
        'releases of each environment, and what serves or is being deployed, are kept for rollback): ' +
        'roll back to a newer release, or build and deploy again',
    );
  }

  /**
   * Redeploys an earlier release as it was (its image and frozen configuration, no
   * rebuild): by default the newest older release that once served the environment.
   */
  async rollback(userId: string, applicationId: string, body: { release_id?: string; environment?: string }) {
    const { environmentId, serving, target } = await this.rollbackTarget(userId, applicationId, body);
    const { deployment_id } = await this.queue(applicationId, environmentId, target.id, serving.id);
    return this.summaryOf(deployment_id);
  }

  /** `GET …/rollback/preview`: the rollback's choice, and the restore points of the migrations it would not undo. */
  async previewRollback(userId: string, applicationId: string, query: { release_id?: string; environment?: string }) {
    await this.apps.authorize(userId, applicationId);
    const environmentId = await chosenEnvironmentId(this.ctx.db, applicationId, query.environment);
    const env = await this.ctx.db.selectFrom('environments').select('slug').where('id', '=', environmentId).executeTakeFirstOrThrow();
    const current = await this.repo.current(applicationId, environmentId);
    const serving = current ? await this.repo.release(current.release_id) : undefined;
    const servingRef = serving ? { id: serving.id, version: serving.version } : null;
    try {
      const { target } = await this.rollbackTarget(userId, applicationId, query);
      return {
        environment: env.slug,
        serving: servingRef,
        target: { id: target.id, version: target.version },
        refusal: null,
        restore_offers: await restoreOffers(this.ctx.db, applicationId, environmentId, target.version, serving!.version),
      };
    } catch (err) {
      // What the rollback would answer (nothing to go back to, an image gone): said, not thrown, by a preview.
      if (!(err instanceof AppError) || err.status !== 409) throw err;
      return { environment: env.slug, serving: servingRef, target: null, refusal: err.message, restore_offers: [] };
    }
  }

  /** The release a rollback goes back to (checked it can run), and the one serving. */
  private async rollbackTarget(userId: string, applicationId: string, body: { release_id?: string; environment?: string }) {
    await this.apps.authorize(userId, applicationId);
    const environmentId = await chosenEnvironmentId(this.ctx.db, applicationId, body.environment);
    await requireDeployAccess(this.ctx.db, userId, environmentId);
    const current = await this.repo.current(applicationId, environmentId);
    const serving = current ? await this.repo.release(current.release_id) : undefined;
    if (!current || !serving) throw conflict('Nothing serves that environment yet: there is nothing to roll back');
    const target = body.release_id
      ? await this.repo.release(body.release_id)
      : await this.repo.previousServedRelease(applicationId, environmentId, serving.version);
    if (body.release_id && (!target || target.application_id !== applicationId || target.environment_id !== environmentId))
      throw notFound('Release');
    if (!target) throw conflict(`No earlier release served before v${serving.version}: there is nothing to roll back to`);
    if (target.id === serving.id) throw conflict(`Release v${target.version} is the one serving`);
    if (!target.built) throw conflict(`Release v${target.version} was never built and cannot be deployed`);
    const image = target.image_ref ? await this.repo.image(target.image_ref) : undefined;
    if (image?.collected_at) throw this.collected(target.version);
    if (!image || !imageAvailable(image))
      throw conflict(`The image of release v${target.version} is gone: roll back to another release or rebuild`);
    return { environmentId, serving, target };
  }

  /** One deployment in the API's shape, with why it waits when it is queued. */
  private async summaryOf(deploymentId: string) {
    const d = (await this.repo.withRelease(deploymentId))!;
    return summary(d, await queueReasons(this.ctx, d.application_id, [d.status === 'queued' ? d.job_id : null]));
  }

  /**
   * `POST /deployments/{id}/cancel`: a queued deployment leaves the queue; a running one stops
   * (its new instances end, the previous release keeps serving). 409 once it has finished.
   */
  async cancel(user: { id: string; username: string }, deploymentId: string) {
    const d = await this.visible(user.id, deploymentId);
    await requireDeployAccess(this.ctx.db, user.id, d.environment_id);
    const finished = () =>
      conflict(`Deployment ${deploymentId} already finished (${deploymentLogStatus(d.status)}): there is nothing to cancel`);
    if (d.status !== 'queued' && d.status !== 'deploying') throw finished();
    const detail = `Cancelled by ${user.username}; the previous release keeps serving`;
    const outcome = d.job_id ? await requireJobs(this.ctx).cancel(d.job_id, detail) : 'dequeued';
    if (outcome === 'dequeued') await this.repo.failIfUnfinished(deploymentId, detail, 'cancelled');
    else if (outcome === 'finished') {
      const now = await this.repo.findById(deploymentId);
      // The job ended between the read and the cancel: settled already, or never started (its record left behind).
      if (now && now.status !== 'queued' && now.status !== 'deploying') throw finished();
      await this.repo.failIfUnfinished(deploymentId, detail, 'cancelled');
    }
    return this.summaryOf(deploymentId);
  }

  /**
   * The guard's rollback (no user: the platform acts on a breach): the release before the
   * deployment's goes back through the normal deploy job, and the deployment is recorded as
   * `rolled_back` with the breach in its log and `error_detail`, with an application event
   * `deployment.rolled_back`. Null when there is nothing to go back to (the breach is logged).
   */
  async rollBackBreached(deploymentId: string, breach: { detail: string } & Record<string, unknown>): Promise<string | null> {
    const d = await this.repo.findById(deploymentId);
    const serving = d ? await this.repo.release(d.release_id) : undefined;
    if (!d || !serving || d.status !== 'complete') return null;
    const line = (text: string) => `${new Date().toISOString()} guard: ${text}\n`;
    const target = await this.repo.previousServedRelease(d.application_id, d.environment_id, serving.version);
    const image = target?.image_ref ? await this.repo.image(target.image_ref) : undefined;
    if (!target || !image || !imageAvailable(image)) {
      await this.repo.appendLog(deploymentId, line(`${breach.detail}; no earlier release with its image to roll back to`));
      return null;
    }
    const { deployment_id } = await this.queue(d.application_id, d.environment_id, target.id, serving.id);
    const detail = `Rolled back by the guard: ${breach.detail}`;
    await this.repo.markRolledBack(deploymentId, detail, line(`${breach.detail}: rolling back to v${target.version}`), {
      ...breach,
      rollback_deployment_id: deployment_id,
      rolled_back_to: { id: target.id, version: target.version },
    });
    return deployment_id;
  }

  /** Records a queued deployment and its job (also used by the build → release → deploy chain). */
  async queue(applicationId: string, environmentId: string, releaseId: string, rollbackOf: string | null = null) {
    const jobs = await requireJobRoom(this.ctx, applicationId);
    const deployment = await this.repo.insert({
      id: uuidv7(),
      application_id: applicationId,
      environment_id: environmentId,
      release_id: releaseId,
      rollback_of: rollbackOf,
    });
    const jobId = await jobs.enqueue(DEPLOY_JOB, { applicationId, environmentId, recordId: deployment.id });
    await this.repo.update(deployment.id, { job_id: jobId });
    return { ok: true, deployment_id: deployment.id };
  }

  /** Newest first, in every environment unless `query.environment` names one. */
  async list(userId: string, applicationId: string, query: PaginatedEnvironmentQuery) {
    await this.apps.authorize(userId, applicationId);
    const environmentId = await environmentFilter(this.ctx.db, applicationId, query.environment);
    return paginate(
      query,
      async (limit, offset) => ({
        total: await this.repo.count(applicationId, environmentId),
        rows: await this.repo.page(applicationId, environmentId, limit, offset),
      }),
      (d) => d,
    ).then(async (page) => {
      const reasons = await queueReasons(
        this.ctx,
        applicationId,
        page.items.map((d) => (d.status === 'queued' ? d.job_id : null)),
      );
      return { ...page, items: page.items.map((d) => summary(d, reasons)) };
    });
  }

  private async visible(userId: string, deploymentId: string) {
    const d = await this.repo.withRelease(deploymentId);
    if (!d) throw notFound('Deployment');
    await this.apps.authorize(userId, d.application_id);
    return d;
  }

  async detail(userId: string, deploymentId: string) {
    const d = await this.visible(userId, deploymentId);
    const reasons = await queueReasons(this.ctx, d.application_id, [d.status === 'queued' ? d.job_id : null]);
    return { ...summary(d, reasons), deploy_log: d.deploy_log };
  }

  async log(userId: string, deploymentId: string) {
    const d = await this.visible(userId, deploymentId);
    return {
      status: deploymentLogStatus(d.status),
      log_text: d.deploy_log,
      error: d.error,
      error_detail: d.error_detail,
      error_code: d.error_code,
      deploy_step: d.deploy_step as PipelineStep | null,
    };
  }

  /** After a scale: running instances follow the new counts (through the queue, never racing a deploy). */
  scaled(applicationId: string): Promise<void> {
    return reconcileAfterScale(this.ctx, this.repo)(applicationId);
  }
}

/**
 * What the applications module calls after a scale (its `onScaled` port, wired by the composition
 * root): running instances of the production environment follow the new counts through a queued
 * `reconcile`, never racing a deploy. Nothing runs yet, nothing to do.
 */
export function reconcileAfterScale(ctx: AppContext, repo: DeploymentsRepository): (applicationId: string) => Promise<void> {
  return async (applicationId) => {
    if (!ctx.jobs) return;
    const environmentId = await repo.productionEnvironmentId(applicationId);
    if (!environmentId || !(await repo.current(applicationId, environmentId))) return;
    await ctx.jobs.enqueue(RECONCILE_JOB, { applicationId, environmentId });
  };
}
