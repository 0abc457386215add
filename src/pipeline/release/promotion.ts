import type { AppContext } from '../../platform/context.js';
import { conflict, notFound } from '../../platform/errors.js';
import { BUILD_STEPS } from '../records/index.js';
import type { ConfigurationsService } from '../../modules/configurations/index.js';
import { resolveServiceConfig } from '../../modules/configurations/index.js';
import type { ImageRecords } from '../build/image-records.js';
import {
  describeChanges,
  diff,
  displayConfiguration,
  frozenFingerprints,
  imageFingerprints,
  sealConfiguration,
} from './release-freezer.js';
import type { ReleasesRepository } from './releases.repository.js';

/** A promotion's release: nothing is rebuilt, the image and (by default) the frozen configuration are copied. */
export class ReleasePromoter {
  private readonly releases: ReleasesRepository;
  private readonly images: ImageRecords;

  constructor(
    private readonly ctx: AppContext,
    releases: ReleasesRepository,
    images: ImageRecords,
    private readonly configs: ConfigurationsService,
  ) {
    this.releases = releases;
    this.images = images;
  }

  /**
   * Copies a built release (image reference + frozen configuration, or the target's own
   * configuration resolved now) into `environmentId` as its next release, built at once.
   */
  async promote(
    sourceReleaseId: string,
    environmentId: string,
    configuration: 'source' | 'target',
    /** The target environment's process counts and pod classes for the application (the environments module knows them). */
    settingsOf: (applicationId: string) => Promise<{ process_counts: unknown; process_pod_classes: unknown }>,
  ): Promise<{ applicationId: string; imageId: string; releaseId: string }> {
    const source = await this.releases.findById(sourceReleaseId);
    if (!source) throw notFound('Release');
    if (!source.built || !source.image_ref) throw conflict(`Release v${source.version} is not built and cannot be promoted`);
    const image = await this.images.findById(source.image_ref);
    if (!image) throw conflict(`The image of release v${source.version} no longer exists`);
    if (image.collected_at)
      throw conflict(`The image of release v${source.version} was garbage-collected: promote a newer release, or build and deploy again`);
    // The source environment's slug, for the log (a read of the environments table).
    const sourceEnv = await this.ctx.db
      .selectFrom('environments')
      .select('slug')
      .where('id', '=', source.environment_id)
      .executeTakeFirst();

    // The source's frozen configuration, or (on request) the target's own, resolved now and frozen the same way.
    let frozen = { configuration: source.configuration ?? [], configuration_sealed: source.configuration_sealed };
    if (configuration === 'target') {
      const resolved = await resolveServiceConfig(this.ctx.db, this.configs, source.application_id, environmentId);
      frozen = { configuration: displayConfiguration(resolved), configuration_sealed: sealConfiguration(this.ctx.secrets, resolved) };
    }
    const { id, version } = await this.releases.insertNext(source.application_id, environmentId, source.platform);
    const previous = await this.releases.previousBuilt(source.application_id, environmentId, version);
    // Diffs against the target's previous release, compared by value in memory only (secrets never leave the seal).
    const fingerprints = (r: { configuration: unknown; configuration_sealed: string | null }) => frozenFingerprints(this.ctx.secrets, r);
    const settings = await settingsOf(source.application_id);
    const configurationChanges = diff(previous ? fingerprints(previous) : null, fingerprints(frozen));
    const imageChanges = diff(previous ? imageFingerprints(previous) : null, imageFingerprints(image));
    const origin = `${sourceEnv?.slug ?? 'another environment'} release v${source.version}`;
    const log = [
      `Promoted from ${origin}: image v${image.version} ${image.image_id ?? ''} (commit ${image.commit_sha?.slice(0, 12) ?? 'unknown'}), not rebuilt`,
      configuration === 'source' ? `Configuration: frozen from ${origin}` : "Configuration: this environment's own, resolved now",
      previous ? `Compared with release v${previous.version}` : 'First release in this environment',
      describeChanges('Image changes', imageChanges),
      describeChanges('Configuration changes', configurationChanges),
      `Release v${version} created`,
    ].join('\n');
    const now = new Date();
    await this.releases.update(id, {
      image_ref: image.id,
      commit_sha: source.commit_sha,
      configuration: JSON.stringify(frozen.configuration),
      configuration_sealed: frozen.configuration_sealed,
      processes: JSON.stringify(source.processes ?? {}),
      process_counts: JSON.stringify(settings.process_counts),
      process_pod_classes: JSON.stringify(settings.process_pod_classes),
      health_check_path: source.health_check_path,
      health_check_host: source.health_check_host,
      deployment_timeout: source.deployment_timeout,
      image_changes: JSON.stringify(imageChanges),
      configuration_changes: JSON.stringify(configurationChanges),
      release_metadata: JSON.stringify({
        image_version: image.version,
        image_id: image.image_id,
        build_ref: image.build_ref,
        previous_release_version: previous?.version ?? null,
        promoted_from: { environment: sourceEnv?.slug ?? null, release_id: source.id, release_version: source.version, configuration },
      }),
      log_text: `${log}\n`,
      build_step: JSON.stringify({ steps: [...BUILD_STEPS], current: BUILD_STEPS.length - 1 }),
      status: 'built',
      built: true,
      error: false,
      started_at: now,
      finished_at: now,
    });
    return { applicationId: source.application_id, imageId: image.id, releaseId: id };
  }
}
