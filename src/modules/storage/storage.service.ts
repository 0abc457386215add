import { join } from 'node:path';
import type { AppContext } from '../../platform/context.js';
import { AppError } from '../../platform/errors.js';
import { iso } from '../../platform/http/schemas.js';
import { bytesUnder, removeTreeBeneath } from '../../platform/storage/disk-usage.js';
import { applicationArtifactsDir, artifactDir, collectUnreferencedImages, type CollectedImage } from '../../pipeline/index.js';
import { pushRepositoryDir } from '../../platform/git/push-repository.js';
import type { OrganizationsService } from '../organizations/index.js';
import type { StorageRepository, UsageBytes } from './storage.repository.js';

const MIB = 1024 * 1024;

export interface StorageOptions {
  /** ORG_DISK_QUOTA_MB: the quota of an organization without its own (0: none). */
  defaultQuotaMb: number;
  /** RELEASES_KEPT_PER_ENVIRONMENT. */
  keepPerEnvironment: number;
  /** BUILDAH_STORAGE_ROOT: each application's Dockerfile build storage is `<root>/apps/<application>`. */
  buildStorageRoot: string;
  /** A measure older than this is taken again before it is shown or judged. */
  maxAgeMs: number;
  /** Removes one version's image from the application's build storage (buildah, in the application's sandbox). */
  removeBuildImage?: (applicationId: string, repositoryName: string, version: number) => Promise<void>;
  logger: { warn(obj: object, msg?: string): void; info(obj: object, msg?: string): void };
}

interface Usage {
  bytes: UsageBytes & { volumes: number };
  total: number;
  measuredAt: Date;
}

/** Volumes count at their full size (not stored with the measure: their records are the truth). */
function withVolumes(bytes: UsageBytes, volumes: number, measuredAt: Date): Usage {
  return { bytes: { ...bytes, volumes }, total: bytes.artifacts + bytes.images + bytes.caches + bytes.logs + volumes, measuredAt };
}

const mib = (bytes: number) => `${(bytes / MIB).toFixed(bytes < 10 * MIB ? 2 : 0)} MiB`;

/**
 * Disk used by each organization (measured, never trusted from tenant paths), its quota, and
 * garbage collection of the images no kept release needs (issue 27, class 5).
 */
export class StorageService {
  constructor(
    private readonly ctx: AppContext,
    private readonly repo: StorageRepository,
    private readonly organizations: OrganizationsService,
    private readonly options: StorageOptions,
  ) {}

  /** The directories holding an application's files, by the kind they count as. */
  private rootsOf(applicationId: string) {
    const dataDir = this.ctx.config.dataDir;
    return {
      artifacts: applicationArtifactsDir(dataDir, applicationId),
      // What `git push` stored counts with the artifacts: source the platform keeps for the application.
      pushed: pushRepositoryDir(dataDir, applicationId),
      images: join(this.options.buildStorageRoot, 'apps', applicationId),
      caches: join(dataDir, 'cache', 'apps', applicationId),
    };
  }

  /** Measures the organization's disk use now and stores it. */
  async measure(organizationId: string): Promise<Usage> {
    const measuredAt = new Date();
    const roots = (await this.repo.applicationIds(organizationId)).map((id) => this.rootsOf(id));
    const sizes = await bytesUnder(roots.flatMap((r) => [r.artifacts, r.pushed, r.images, r.caches]));
    const sum = (kind: 'artifacts' | 'pushed' | 'images' | 'caches') => roots.reduce((n, r) => n + (sizes.get(r[kind]) ?? 0), 0);
    const bytes = {
      artifacts: sum('artifacts') + sum('pushed'),
      images: sum('images'),
      caches: sum('caches'),
      logs: await this.repo.logBytes(organizationId),
    };
    await this.repo.saveUsage(organizationId, bytes, measuredAt);
    return withVolumes(bytes, await this.repo.volumeBytes(organizationId), measuredAt);
  }

  /** The stored measure, taken again when a build ended after it or it is older than `maxAgeMs`. */
  async current(organizationId: string): Promise<Usage> {
    const [row, lastBuild] = await Promise.all([this.repo.usage(organizationId), this.repo.lastBuildFinished(organizationId)]);
    const stale =
      !row || Date.now() - row.measured_at.getTime() > this.options.maxAgeMs || (lastBuild !== null && lastBuild >= row.measured_at);
    if (stale) return this.measure(organizationId);
    const bytes = {
      artifacts: Number(row.artifacts_bytes),
      images: Number(row.images_bytes),
      caches: Number(row.caches_bytes),
      logs: Number(row.logs_bytes),
    };
    return withVolumes(bytes, await this.repo.volumeBytes(organizationId), row.measured_at);
  }

  /** Refuses (409) a volume that would take the organization past its quota: volumes count at their size. */
  async requireVolumeRoom(organizationId: string, extraBytes: number): Promise<void> {
    const org = await this.repo.organization(organizationId);
    const quota = org ? this.quotaBytes(org.disk_quota_mb) : null;
    if (!org || quota === null || extraBytes <= 0) return;
    const usage = await this.current(organizationId);
    if (usage.total + extraBytes <= quota) return;
    throw new AppError(
      'DISK_QUOTA_EXCEEDED',
      `Disk quota exceeded: organization '${org.slug}' uses ${mib(usage.total)} (volumes ${mib(usage.bytes.volumes)}) of its ` +
        `${mib(quota)} quota; ${mib(extraBytes)} more does not fit: delete a volume, or ask a site administrator to raise the quota`,
    );
  }

  private quotaBytes(ownQuotaMb: number | null): number | null {
    const mb = ownQuotaMb ?? this.options.defaultQuotaMb;
    return mb > 0 ? mb * MIB : null;
  }

  /**
   * Refuses a new build of the application (409 `DISK_QUOTA_EXCEEDED`, naming the usage and
   * the limit) while its organization's disk use is at or over its quota. Changes nothing.
   */
  async requireBuildRoom(applicationId: string, options: { fresh?: boolean } = {}): Promise<void> {
    const org = await this.repo.organizationOfApplication(applicationId);
    if (!org) return;
    const quota = this.quotaBytes(org.disk_quota_mb);
    if (quota === null) return;
    // `fresh`: what the last push stored is not in a stored measure (no build ended since to re-take it).
    const usage = options.fresh ? await this.measure(org.id) : await this.current(org.id);
    if (usage.total < quota) return;
    const { artifacts, images, caches, logs } = usage.bytes;
    throw new AppError(
      'DISK_QUOTA_EXCEEDED',
      `Disk quota exceeded: organization '${org.slug}' uses ${mib(usage.total)} (${usage.total} bytes: artifacts ${mib(artifacts)}, ` +
        `build images ${mib(images)}, caches ${mib(caches)}, logs ${mib(logs)}) of its ${mib(quota)} quota (${quota} bytes); ` +
        `new builds are refused until its use is below the quota (images of releases older than the last ` +
        `${this.options.keepPerEnvironment} per environment are collected) or a site administrator raises it`,
    );
  }

  /** How many bytes the application's organization may still store (its last measure), or null without a quota. */
  async roomLeft(applicationId: string): Promise<number | null> {
    const org = await this.repo.organizationOfApplication(applicationId);
    const quota = org ? this.quotaBytes(org.disk_quota_mb) : null;
    if (!org || quota === null) return null;
    return Math.max(0, quota - (await this.current(org.id)).total);
  }

  /** GET /organizations/{slug}/usage: any member. */
  async view(userId: string, slug: string) {
    const { org } = await this.organizations.resolve(userId, slug);
    const usage = await this.current(org.id);
    const quota = this.quotaBytes(org.disk_quota_mb);
    return {
      organization: org.slug,
      total_bytes: usage.total,
      bytes: usage.bytes,
      quota_bytes: quota,
      over_quota: quota !== null && usage.total >= quota,
      releases_kept_per_environment: this.options.keepPerEnvironment,
      measured: iso(usage.measuredAt),
    };
  }

  /**
   * Garbage collection of one application: the images no kept release, deployment, instance
   * or build needs are marked collected, then their artifact and build-storage image removed.
   */
  async collectApplication(applicationId: string): Promise<CollectedImage[]> {
    const collected = await collectUnreferencedImages(this.ctx.db, applicationId, this.options.keepPerEnvironment);
    const root = applicationArtifactsDir(this.ctx.config.dataDir, applicationId);
    for (const image of collected) {
      // The path is rebuilt from the record's ids, never read from a stored path.
      await removeTreeBeneath(root, artifactDir(this.ctx.config.dataDir, image.application_id, image.version)).catch((err: unknown) =>
        this.options.logger.warn({ err, imageId: image.id }, 'removing a collected artifact failed'),
      );
      if (image.builder === 'buildah' && this.options.removeBuildImage) {
        await this.options
          .removeBuildImage(image.application_id, image.repository_name, image.version)
          .catch((err: unknown) => this.options.logger.warn({ err, imageId: image.id }, 'removing a collected build image failed'));
      }
    }
    if (collected.length > 0)
      this.options.logger.info({ applicationId, versions: collected.map((i) => i.version) }, 'collected unreferenced images');
    return collected;
  }

  /** The sweeper: collects every application's garbage, then measures every organization. */
  async sweep(): Promise<void> {
    for (const organizationId of await this.repo.organizationIds()) {
      let collected = 0;
      for (const applicationId of await this.repo.applicationIds(organizationId)) {
        collected += (await this.collectApplication(applicationId)).length;
      }
      const row = await this.repo.usage(organizationId);
      if (collected > 0 || !row || Date.now() - row.measured_at.getTime() >= this.options.maxAgeMs / 2) await this.measure(organizationId);
    }
  }

  /** After an application's deploy: collect what it left unreferenced, and measure its organization again. */
  async afterDeploy(applicationId: string): Promise<void> {
    const collected = await this.collectApplication(applicationId);
    if (collected.length === 0) return;
    const org = await this.repo.organizationOfApplication(applicationId);
    if (org) await this.measure(org.id);
  }
}
