import { v7 as uuidv7 } from 'uuid';
import type { AppContext } from '../../platform/context.js';
import type { RuntimeLogger } from '../../platform/runtime/application-runtime.js';
import { AppError } from '../../platform/errors.js';
import { requireJobRoom } from '../../platform/jobs/require-jobs.js';
import type { ApplicationsService } from '../applications/index.js';
import { DeployRunner, settleInterrupted } from './deploy-runner.js';
import { requireDeployAccess } from '../../platform/access/environment-protection.js';
import { DeploymentsRepository } from './deployments.repository.js';
import { RELEASE_INTERRUPTED } from '../releases/index.js';

/** The build stage as the chain uses it (ImagesService). */
export interface BuildStage {
  createImage(applicationId: string, ref?: string | null): Promise<{ id: string; version: number }>;
  runBuild(imageId: string, signal: AbortSignal): Promise<{ ok: boolean }>;
  failInterrupted(imageId: string): Promise<boolean>;
}

/** The release stage as the chain uses it (ReleasesService). */
export interface ReleaseStage {
  createRelease(applicationId: string, environmentId: string): Promise<{ id: string; version: number }>;
  runRelease(releaseId: string, signal: AbortSignal): Promise<{ ok: boolean }>;
}

export const CHAIN_JOB = 'chain';

/**
 * `POST /applications/{id}/deploy` (and a GitHub push): build, then release, then deploy,
 * as ONE pipeline job so nothing of the same application runs in between. Each stage
 * writes its own record; a failed stage ends the chain with that record's error.
 */
export class DeployChain {
  private readonly repo: DeploymentsRepository;

  constructor(
    private readonly ctx: AppContext,
    private readonly apps: ApplicationsService,
    private readonly build: BuildStage,
    private readonly release: ReleaseStage,
  ) {
    this.repo = new DeploymentsRepository(ctx.db);
  }

  /** Registers the `chain` job kind (in processes with a runtime). */
  registerJobs(logger: RuntimeLogger) {
    const { jobs, runtime } = this.ctx;
    if (!jobs || !runtime) return;
    const runner = new DeployRunner(this.ctx, runtime, logger);
    jobs.register(
      CHAIN_JOB,
      async (data, job) => {
        await this.run(runner, data.applicationId, String(data.environmentId), String(data.recordId), job.jobId, job.signal);
      },
      {
        onInterrupted: async (data, job) => {
          await this.build.failInterrupted(String(data.recordId));
          const records = await this.recordsOf(job.jobId);
          if (records.releases.length > 0) {
            await this.ctx.db
              .updateTable('releases')
              .set({ status: 'error', error: true, error_detail: RELEASE_INTERRUPTED, finished_at: new Date(), updated_at: new Date() })
              .where(
                'id',
                'in',
                records.releases.map((r) => r.id),
              )
              .where('status', '=', 'building')
              .execute();
          }
          for (const d of records.deployments) await settleInterrupted(this.ctx, d.id);
        },
      },
    );
  }

  /** `POST /applications/{id}/deploy`: the caller must be a member of the application's organization. */
  async request(userId: string, applicationId: string, ref?: string | null) {
    await this.apps.authorize(userId, applicationId);
    const production = await this.repo.productionEnvironmentId(applicationId);
    if (production) await requireDeployAccess(this.ctx.db, userId, production);
    return this.start(applicationId, ref);
  }

  /**
   * Queues the chain for the application's production environment (a GitHub push calls this
   * with the pushed commit); answers with the new image record.
   */
  async start(applicationId: string, ref?: string | null, targetEnvironmentId?: string) {
    const jobs = await requireJobRoom(this.ctx, applicationId);
    // Environment deploys (`POST .../envs/{env}/deploy`) name their environment.
    const environmentId = targetEnvironmentId ?? (await this.repo.productionEnvironmentId(applicationId));
    if (!environmentId) throw new AppError('NOT_FOUND', 'Production environment not found');
    const image = await this.build.createImage(applicationId, ref);
    try {
      const jobId = await jobs.enqueue(CHAIN_JOB, { applicationId, environmentId, recordId: image.id });
      await this.ctx.db.updateTable('images').set({ job_id: jobId }).where('id', '=', image.id).execute();
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
    await this.ctx.db.updateTable('releases').set({ job_id: jobId }).where('id', '=', release.id).execute();
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

  private async recordsOf(jobId: string) {
    const releases = await this.ctx.db.selectFrom('releases').select('id').where('job_id', '=', jobId).execute();
    const deployments = await this.ctx.db.selectFrom('deployments').select('id').where('job_id', '=', jobId).execute();
    return { releases, deployments };
  }
}
