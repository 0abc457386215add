import type { AppContext } from '../../platform/context.js';
import type { ChangeSet, ProcessCounts, ProcessDefinitions, ProcessPodClasses } from '../../platform/db/schema.js';
import { forbidden, notFound } from '../../platform/errors.js';
import { iso, paginate, type PaginatedEnvironmentQuery } from '../../platform/http/schemas.js';
import { requireJobRoom, requireJobs } from '../../platform/jobs/require-jobs.js';
import type { JobMaintenance, Jobs } from '../../platform/jobs/types.js';
import type { ApplicationsService } from '../../modules/applications/index.js';
import type { ConfigurationsService } from '../../modules/configurations/index.js';
import { queueRecordJob, recordLogView } from '../records/index.js';
import { environmentFilter } from '../records/index.js';
import type { DisplayedVariable } from './release-freezer.js';
import { ReleaseRunner } from './release-runner.js';
import { protectedRefusal } from '../../platform/access/environment-protection.js';
import type { ReleasesRepository } from './releases.repository.js';
import { RELEASE_JOB } from '../stages.js';
import type { ImageRecords } from '../build/image-records.js';

const RELEASE_ABANDONED =
  'abandoned: its pipeline job is no longer queued or running (the server stopped at the wrong moment); create the release again';
export const RELEASE_INTERRUPTED =
  'interrupted by a restart: the worker creating this release stopped before it finished; create the release again';

type ReleaseRow = NonNullable<Awaited<ReturnType<ReleasesRepository['findById']>>> & { environment: string };

const summary = (r: ReleaseRow) => ({
  id: r.id,
  version: r.version,
  application_id: r.application_id,
  environment_id: r.environment_id,
  environment: r.environment,
  platform: r.platform,
  built: r.built,
  error: r.error,
  created: iso(r.created_at),
  updated: iso(r.updated_at),
});

/**
 * Releases of an application (one version numbering across its environments). Creating
 * one through the application-level API targets the production environment; lists show
 * every environment unless `?environment=` narrows them. `createRelease` + `runRelease` are the pipeline stage (the
 * `release` job, and the chain of `POST /applications/{id}/deploy`).
 */
export class ReleasesService {
  private readonly repo: ReleasesRepository;
  private readonly runner: ReleaseRunner;

  constructor(
    private readonly ctx: AppContext,
    repo: ReleasesRepository,
    images: ImageRecords,
    private readonly apps: ApplicationsService,
    configs: ConfigurationsService,
  ) {
    this.repo = repo;
    this.runner = new ReleaseRunner(ctx, repo, images, apps, configs);
  }

  /** Registers the `release` job kind and a sweeper that fails releases whose job is gone. */
  registerJobs(jobs: Jobs & JobMaintenance) {
    jobs.register(
      RELEASE_JOB,
      async (data) => {
        await this.runRelease(data.recordId!);
      },
      {
        onInterrupted: async (data) => {
          await this.failInterrupted(data.recordId!);
        },
      },
    );
    jobs.addSweeper(async () => {
      await this.repo.settleAbandoned(await jobs.liveJobIds(), RELEASE_ABANDONED);
    });
  }

  // --- pipeline stage ---

  /** A new release record (status `building`, next version in the environment); frozen when its job runs. */
  /**
   * A new release of the environment, to be frozen by `runRelease`: of `imageId` when given (a
   * configuration change keeps the image serving, also after a rollback), else of the newest built image.
   */
  async createRelease(applicationId: string, environmentId: string, imageId?: string | null): Promise<{ id: string; version: number }> {
    const app = await this.apps.find(applicationId);
    if (!app) throw notFound('Application');
    return this.repo.insertNext(app.id, environmentId, app.platform, imageId ?? null);
  }

  /** Freezes the release; failures are recorded on it. (Quick and local: nothing to abort.) */
  runRelease(releaseId: string, _signal?: AbortSignal): Promise<{ ok: boolean }> {
    return this.runner.run(releaseId);
  }

  /** Records that a pipeline job (the deploy chain) fills this release. */
  async assignJob(releaseId: string, jobId: string): Promise<void> {
    await this.repo.update(releaseId, { job_id: jobId });
  }

  /** Settles the releases a pipeline job left in progress when its worker died. */
  async failInterruptedOfJob(jobId: string): Promise<void> {
    for (const { id } of await this.repo.idsOfJob(jobId)) await this.failInterrupted(id);
  }

  /** Settles a release whose worker died. */
  failInterrupted(releaseId: string): Promise<boolean> {
    return this.repo.failIfBuilding(releaseId, RELEASE_INTERRUPTED);
  }

  // --- API ---

  async requestRelease(userId: string, applicationId: string) {
    // Every check in one statement (issue 35), answered in the order the separate checks answered:
    // the application and membership (404, 403), its production (404), protection (403), the pipeline (503), the caps (429).
    const checks = await this.repo.requestChecks(applicationId, userId);
    if (!checks) throw notFound('Application');
    if (!checks.is_member) throw forbidden();
    const environmentId = checks.environment_id;
    if (!environmentId) throw notFound('Production environment of the application');
    if (checks.locked && !checks.org_admin) throw protectedRefusal(checks.locked, 'its releases');
    const jobs = requireJobs(this.ctx);
    jobs.refuseOverCaps(checks);
    const budget = { organizationId: checks.organization_id, ownerId: checks.owner_id };
    // The release, its job and the audit row in one statement; the version's lock lasts only that statement.
    const release = await this.repo.insertNext(checks.id, environmentId, checks.platform, null, (source, recordId) =>
      jobs.enqueueFrom(RELEASE_JOB, { applicationId, environmentId, recordId, ...budget }, source),
    );
    jobs.wake();
    return { ok: true, release_id: release.id, version: release.version };
  }

  /** A new release of the environment with its job queued (behind the application's earlier jobs); no access check. */
  async queueRelease(applicationId: string, environmentId: string, imageId?: string | null) {
    const jobs = await requireJobRoom(this.ctx, applicationId);
    const release = await this.createRelease(applicationId, environmentId, imageId);
    await queueRecordJob(this.ctx.db, 'releases', jobs, RELEASE_JOB, { applicationId, environmentId, recordId: release.id }, 'release');
    return release;
  }

  /** Newest first, in every environment unless `query.environment` names one. */
  async list(userId: string, applicationId: string, query: PaginatedEnvironmentQuery) {
    await this.apps.authorize(userId, applicationId);
    const environmentId = await environmentFilter(this.ctx.db, applicationId, query.environment);
    return paginate(query, (limit, offset) => this.repo.page(applicationId, environmentId, limit, offset), summary);
  }

  private async visible(userId: string, releaseId: string) {
    const release = await this.repo.withImage(releaseId);
    if (!release) throw notFound('Release');
    await this.apps.authorize(userId, release.application_id);
    return release;
  }

  async detail(userId: string, releaseId: string) {
    const r = await this.visible(userId, releaseId);
    return {
      ...summary(r),
      repository_name: r.img_repository_name ?? '',
      release_id: `v${r.version}`,
      image: r.img_id
        ? {
            id: r.img_id,
            version: r.img_version!,
            image_id: r.img_digest,
            commit_sha: r.img_commit_sha,
            built: r.img_built!,
            created: iso(r.img_created_at!),
          }
        : null,
      configuration: r.configuration as DisplayedVariable[] | null,
      image_changes: r.image_changes as ChangeSet | null,
      configuration_changes: r.configuration_changes as ChangeSet | null,
      error_detail: r.error_detail,
      error_code: r.error_code,
      dockerfile: r.img_dockerfile,
      release_metadata: r.release_metadata,
      commit_sha: r.commit_sha,
      processes: r.processes as ProcessDefinitions | null,
      process_counts: r.process_counts as ProcessCounts | null,
      process_pod_classes: r.process_pod_classes as ProcessPodClasses | null,
      health_check_path: r.health_check_path,
      health_check_host: r.health_check_host,
      deployment_timeout: r.deployment_timeout,
    };
  }

  async log(userId: string, releaseId: string) {
    return recordLogView(await this.visible(userId, releaseId));
  }
}
