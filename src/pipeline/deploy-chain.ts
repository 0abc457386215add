import { v7 as uuidv7 } from 'uuid';
import { requireBuildInstallation } from '../platform/github/installation-links.js';
import type { AppContext } from '../platform/context.js';
import type { RuntimeLogger } from '../platform/runtime/application-runtime.js';
import { AppError } from '../platform/errors.js';
import { requireJobRoom } from '../platform/jobs/require-jobs.js';
import type { ApplicationsService } from '../modules/applications/index.js';
import { DeployRunner, settleInterrupted } from './deploy/deploy-runner.js';
import { requireDeployAccess } from '../platform/access/environment-protection.js';
import { DeploymentsRepository } from './deploy/deployments.repository.js';
import { CHAIN_JOB } from './stages.js';
import type { BuildSource } from './build/images.service.js';

/** The build stage as the chain uses it (ImagesService). */
export interface BuildStage {
  createImage(
    applicationId: string,
    ref?: string | null,
    environmentId?: string,
    source?: BuildSource,
  ): Promise<{ id: string; version: number }>;
  runBuild(imageId: string, signal: AbortSignal): Promise<{ ok: boolean }>;
  failInterrupted(imageId: string): Promise<boolean>;
  assignJob(imageId: string, jobId: string): Promise<void>;
}

/** The release stage as the chain uses it (ReleasesService). */
export interface ReleaseStage {
  createRelease(applicationId: string, environmentId: string): Promise<{ id: string; version: number }>;
  runRelease(releaseId: string, signal: AbortSignal): Promise<{ ok: boolean }>;
  assignJob(releaseId: string, jobId: string): Promise<void>;
  /** Fails (with the stage's own "interrupted" message) the releases the job left in progress. */
  failInterruptedOfJob(jobId: string): Promise<void>;
}

export { CHAIN_JOB } from './stages.js';

/** A chain as its observers see it: which application, environment and commit. */
export interface ChainEvent {
  applicationId: string;
  environmentId: string;
  /** The chain's image record (its id identifies the chain). */
  imageId: string;
  /** The commit built (the requested ref until the build resolved it). */
  commitSha: string | null;
}

/** How a chain ended: deployed (with the URL it serves at) or failed (with the reason). */
export interface ChainOutcome extends ChainEvent {
  ok: boolean;
  url: string | null;
  detail: string | null;
}

/**
 * Told when a chain starts running and when it settles (GitHub commit statuses and
 * deployments). An observer's failure is logged and never fails the chain.
 */
export interface ChainObserver {
  started?(chain: ChainEvent): Promise<void>;
  settled?(outcome: ChainOutcome): Promise<void>;
}

/**
 * `POST /applications/{id}/deploy` (and a GitHub push): build, then release, then deploy,
 * as ONE pipeline job so nothing of the same application runs in between. Each stage
 * writes its own record; a failed stage ends the chain with that record's error.
 */
export class DeployChain {
  private readonly repo: DeploymentsRepository;
  private readonly observers: ChainObserver[] = [];

  constructor(
    private readonly ctx: AppContext,
    repo: DeploymentsRepository,
    private readonly apps: ApplicationsService,
    private readonly build: BuildStage,
    private readonly release: ReleaseStage,
  ) {
    this.repo = repo;
  }

  observe(observer: ChainObserver) {
    this.observers.push(observer);
  }

  /** Registers the `chain` job kind (in processes with a runtime). */
  registerJobs(logger: RuntimeLogger) {
    const { jobs, runtime } = this.ctx;
    if (!jobs || !runtime) return;
    const runner = new DeployRunner(this.ctx, this.repo, runtime, logger);
    const tell = async (what: (o: ChainObserver) => Promise<void> | undefined) => {
      for (const o of this.observers) await what(o)?.catch((err: unknown) => logger.warn({ err }, 'chain observer failed'));
    };
    jobs.register(
      CHAIN_JOB,
      async (data, job) => {
        const environmentId = String(data.environmentId);
        const imageId = String(data.recordId);
        const chain = { applicationId: data.applicationId, environmentId, imageId };
        if (this.observers.length) {
          const started = { ...chain, commitSha: await this.commitOf(imageId) };
          await tell((o) => o.started?.(started));
        }
        try {
          await this.run(runner, data.applicationId, environmentId, imageId, job.jobId, job.signal);
        } finally {
          if (this.observers.length && !job.signal.aborted) {
            const outcome = await this.outcomeOf(chain, job.jobId);
            await tell((o) => o.settled?.(outcome));
          }
        }
      },
      {
        onInterrupted: async (data, job) => {
          await this.build.failInterrupted(String(data.recordId));
          await this.release.failInterruptedOfJob(job.jobId);
          for (const d of await this.repo.idsOfJob(job.jobId)) await settleInterrupted(this.ctx, this.repo, d.id);
        },
      },
    );
  }

  /** `POST /applications/{id}/deploy`: the caller must be a member of the application's organization. */
  async request(userId: string, applicationId: string, ref?: string | null) {
    const app = await this.apps.authorize(userId, applicationId);
    await requireBuildInstallation(this.ctx.db, app);
    const production = await this.repo.productionEnvironmentId(applicationId);
    if (production) await requireDeployAccess(this.ctx.db, userId, production);
    return this.start(applicationId, ref);
  }

  /**
   * Queues the chain for the application's production environment (a GitHub push calls this
   * with the pushed commit); answers with the new image record.
   */
  async start(applicationId: string, ref?: string | null, targetEnvironmentId?: string, source: BuildSource = {}) {
    const jobs = await requireJobRoom(this.ctx, applicationId);
    // Environment deploys (`POST .../envs/{env}/deploy`) name their environment.
    const environmentId = targetEnvironmentId ?? (await this.repo.productionEnvironmentId(applicationId));
    if (!environmentId) throw new AppError('NOT_FOUND', 'Production environment not found');
    // The image is built for the chain's environment: its configuration and cache scope.
    const image = await this.build.createImage(applicationId, ref, environmentId, source);
    try {
      const jobId = await jobs.enqueue(CHAIN_JOB, { applicationId, environmentId, recordId: image.id });
      await this.build.assignJob(image.id, jobId);
      return { ok: true, image_id: image.id, job_id: jobId };
    } catch (err) {
      await this.build.failInterrupted(image.id);
      throw err;
    }
  }

  private async run(
    runner: DeployRunner,
    applicationId: string,
    environmentId: string,
    imageId: string,
    jobId: string,
    signal: AbortSignal,
  ) {
    const built = await this.build.runBuild(imageId, signal);
    if (!built.ok || signal.aborted) return;
    const release = await this.release.createRelease(applicationId, environmentId);
    await this.release.assignJob(release.id, jobId);
    const released = await this.release.runRelease(release.id, signal);
    if (!released.ok || signal.aborted) return;
    const deployment = await this.repo.insert({
      id: uuidv7(),
      application_id: applicationId,
      environment_id: environmentId,
      release_id: release.id,
    });
    await this.repo.update(deployment.id, { job_id: jobId });
    await runner.run(deployment.id, jobId, signal);
  }

  private async commitOf(imageId: string) {
    const image = await this.ctx.db.selectFrom('images').select(['commit_sha', 'build_ref']).where('id', '=', imageId).executeTakeFirst();
    return image?.commit_sha ?? image?.build_ref ?? null;
  }

  /** The chain's result, read from its records: the deployment's, else the first failed stage's. */
  private async outcomeOf(chain: Omit<ChainEvent, 'commitSha'>, jobId: string): Promise<ChainOutcome> {
    const commitSha = await this.commitOf(chain.imageId);
    const deployment = await this.ctx.db
      .selectFrom('deployments')
      .select(['status', 'error_detail', 'deploy_metadata'])
      .where('job_id', '=', jobId)
      .orderBy('created_at', 'desc')
      .executeTakeFirst();
    if (deployment) {
      const url = (deployment.deploy_metadata as { url?: string } | null)?.url ?? null;
      return { ...chain, commitSha, ok: deployment.status === 'complete', url, detail: deployment.error_detail };
    }
    const failed =
      (await this.ctx.db
        .selectFrom('releases')
        .select('error_detail')
        .where('job_id', '=', jobId)
        .where('error', '=', true)
        .executeTakeFirst()) ??
      (await this.ctx.db.selectFrom('images').select('error_detail').where('id', '=', chain.imageId).executeTakeFirst());
    return { ...chain, commitSha, ok: false, url: null, detail: failed?.error_detail ?? 'The chain did not reach a deployment' };
  }
}
