import { rm } from 'node:fs/promises';
import { requireBuildInstallation } from '../../platform/github/installation-links.js';
import type { Builder } from '../../platform/builder/index.js';
import type { AppContext } from '../../platform/context.js';
import { invalid, notFound } from '../../platform/errors.js';
import { iso, paginate, type PaginationQuery } from '../../platform/http/schemas.js';
import { requireJobRoom } from '../../platform/jobs/require-jobs.js';
import type { JobMaintenance, Jobs } from '../../platform/jobs/types.js';
import type { ApplicationsService } from '../../modules/applications/index.js';
import type { ConfigurationsService } from '../../modules/configurations/index.js';
import { requireProtectedEnvironmentAdmin } from '../../platform/access/environment-protection.js';
import { environmentTrust, productionEnvironmentId, queueRecordJob, recordLogView } from '../records/index.js';
import { ABANDONED, artifactDir, BuildRunner, buildWorkDir, INTERRUPTED_BY_RESTART, previewCacheScope } from './build-runner.js';
import type { ImagesRepository } from './images.repository.js';
import { BUILD_JOB } from '../stages.js';
import { queueReasons } from '../deploy/queue-reasons.js';

/** Where a build reads its source: the application's github_repository, or (`pushed`) its repository on this server. */
export interface BuildSource {
  pushed?: boolean;
  /** An image deploy: the reference pinned by digest, and sealed pull credentials (another registry's) or null. */
  image?: { reference: string; credentials: string | null };
}

type ImageRow = NonNullable<Awaited<ReturnType<ImagesRepository['findById']>>>;

const summary = (i: ImageRow) => ({
  id: i.id,
  version: i.version,
  application_id: i.application_id,
  repository_name: i.repository_name,
  built: i.built,
  error: i.error,
  created: iso(i.created_at),
  updated: iso(i.updated_at),
});

/**
 * Images (builds) of an application. `createImage` + `runBuild` are the pipeline stage
 * (the `build` job, and the `chain` job of `POST /applications/{id}/deploy`); the rest is the API.
 */
export class ImagesService {
  private readonly repo: ImagesRepository;
  private readonly runner: BuildRunner;

  constructor(
    private readonly ctx: AppContext,
    repo: ImagesRepository,
    private readonly apps: ApplicationsService,
    configs: ConfigurationsService,
    private readonly builders: Builder[],
    /** Refuses a new build (throws) when the application's organization is over its disk quota; wired by the composition root. */
    private readonly buildRoom: (applicationId: string) => Promise<void> = async () => {},
  ) {
    this.repo = repo;
    this.runner = new BuildRunner(ctx, repo, apps, configs, builders);
  }

  /**
   * Registers the `build` job kind (a build interrupted by a restart fails with a clear
   * record) and a sweeper that fails builds whose job is gone.
   */
  registerJobs(jobs: Jobs & JobMaintenance) {
    jobs.register(
      BUILD_JOB,
      async (data, job) => {
        await this.runBuild(data.recordId!, job.signal);
      },
      {
        onInterrupted: async (data) => {
          await this.failInterrupted(data.recordId!);
        },
      },
    );
    jobs.addSweeper(async () => {
      await this.repo.settleAbandoned(await jobs.liveJobIds(), ABANDONED);
    });
  }

  // --- pipeline stage ---

  /**
   * A new image record (status `building`, next version) for an environment (production when
   * not named): the build runs with its configuration when its job does.
   */
  async createImage(
    applicationId: string,
    ref?: string | null,
    environmentId?: string,
    source: BuildSource = {},
  ): Promise<{ id: string; version: number }> {
    const app = await this.apps.find(applicationId);
    if (!app) throw notFound('Application');
    if (!app.github_repository && !source.pushed && !source.image)
      throw invalid('github_repository', 'set the repository to build from (PATCH /applications/{id}/settings) first');
    // Every new build passes here (POST build, the deploy chain, GitHub pushes, previews): refused before anything is stored.
    await this.buildRoom(app.id);
    const target = environmentId ?? (await productionEnvironmentId(this.ctx.db, app.id));
    return this.repo.insertNext(app.id, {
      repository_name: `${app.organization_slug}/${app.project_slug}/${app.slug}`,
      build_ref: ref ?? app.auto_deploy_branch ?? 'HEAD',
      environment_id: target,
      built_for_preview: (await environmentTrust(this.ctx.db, target)).preview,
      pushed: source.pushed ?? false,
      source_image: source.image?.reference ?? null,
      source_credentials: source.image?.credentials ?? null,
    });
  }

  /** Runs the build of an image record; failures are recorded on it. */
  runBuild(imageId: string, signal: AbortSignal): Promise<{ ok: boolean }> {
    return this.runner.run(imageId, signal);
  }

  /** Records that a pipeline job (the deploy chain) fills this image. */
  async assignJob(imageId: string, jobId: string): Promise<void> {
    await this.repo.update(imageId, { job_id: jobId });
  }

  /** Settles a build whose worker died, and removes what it left on disk. */
  async failInterrupted(imageId: string): Promise<boolean> {
    const failed = await this.repo.failIfBuilding(imageId, INTERRUPTED_BY_RESTART);
    const image = failed ? await this.repo.findById(imageId) : undefined;
    if (image) {
      await rm(buildWorkDir(this.ctx.config.dataDir, image.id), { recursive: true, force: true });
      await rm(artifactDir(this.ctx.config.dataDir, image.application_id, image.version), { recursive: true, force: true });
      if (image.built_for_preview)
        for (const b of this.builders) await b.discardCacheScope(image.application_id, previewCacheScope(image.id));
    }
    return failed;
  }

  // --- API ---

  async requestBuild(userId: string, applicationId: string, ref?: string) {
    const app = await this.apps.authorize(userId, applicationId);
    await requireBuildInstallation(this.ctx.db, app);
    // The latest built image is what the next release ships: building one picks it.
    await requireProtectedEnvironmentAdmin(this.ctx.db, userId, { applicationId }, 'the images its releases are made from');
    const jobs = await requireJobRoom(this.ctx, applicationId);
    const image = await this.createImage(applicationId, ref);
    await queueRecordJob(this.ctx.db, 'images', jobs, BUILD_JOB, { applicationId, recordId: image.id }, 'build');
    return { ok: true, image_id: image.id, version: image.version };
  }

  async list(userId: string, applicationId: string, query: PaginationQuery) {
    await this.apps.authorize(userId, applicationId);
    return paginate(query, (limit, offset) => this.repo.page(applicationId, limit, offset), summary);
  }

  private async visible(userId: string, imageId: string): Promise<ImageRow> {
    const image = await this.repo.findById(imageId);
    if (!image) throw notFound('Image');
    await this.apps.authorize(userId, image.application_id);
    return image;
  }

  /** The image of an application by its version number (Ancla's clients address builds so). */
  async idOfVersion(userId: string, applicationId: string, version: number): Promise<string> {
    await this.apps.authorize(userId, applicationId);
    const image = await this.repo.findByVersion(applicationId, version);
    if (!image) throw notFound(`Build v${version}`);
    return image.id;
  }

  async detail(userId: string, imageId: string) {
    const i = await this.visible(userId, imageId);
    return {
      job_id: i.job_id,
      ...summary(i),
      image_id: i.image_id,
      error_detail: i.error_detail,
      error_code: i.error_code,
      build_slug: i.build_slug,
      build_ref: i.build_ref,
      dockerfile: i.dockerfile,
      procfile: i.procfile,
      processes: i.processes,
      image_metadata: i.image_metadata,
      commit_sha: i.commit_sha,
    };
  }

  async log(userId: string, imageId: string) {
    const image = await this.visible(userId, imageId);
    const reasons = await queueReasons(this.ctx, image.application_id, [image.status === 'building' ? image.job_id : null]);
    return { ...recordLogView(image), queue_reason: image.job_id ? (reasons.get(image.job_id) ?? null) : null };
  }
}
