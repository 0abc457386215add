import { PipelineFailure, failureCodeOf, type FailureCode } from '../../platform/failures.js';
import type { AppContext } from '../../platform/context.js';
import type { ApplicationsService } from '../../modules/applications/index.js';
import type { ConfigurationsService } from '../../modules/configurations/index.js';
import { resolveServiceConfig } from '../../modules/configurations/index.js';
import { effectiveProcessSettings } from '../../modules/environments/index.js';
import type { ProcessDefinitions } from '../../platform/db/schema.js';
import type { ImageRecords } from '../build/image-records.js';
import { environmentTrust, RecordLog } from '../records/index.js';
import {
  configurationFingerprints,
  describeChanges,
  diff,
  displayConfiguration,
  frozenFingerprints,
  imageFingerprints,
  sealConfiguration,
} from './release-freezer.js';
import type { ReleasesRepository } from './releases.repository.js';

/** A release that failed for a reason the user can act on: the message is its `error_detail`. */
export class ReleaseError extends PipelineFailure {
  constructor(message: string, code: FailureCode = 'release_failed') {
    super(message, code);
  }
}

/**
 * Freezes a release: the application's latest built image (at the time the job runs, so
 * a release queued behind a build uses that build), the resolved configuration of the
 * environment, and the process and health-check settings; then its diffs against the
 * previous release. Failures are recorded on the release, never thrown.
 */
export class ReleaseRunner {
  private readonly releases: ReleasesRepository;
  private readonly images: ImageRecords;

  constructor(
    private readonly ctx: AppContext,
    releases: ReleasesRepository,
    images: ImageRecords,
    private readonly apps: Pick<ApplicationsService, 'find'>,
    private readonly configs: ConfigurationsService,
  ) {
    this.releases = releases;
    this.images = images;
  }

  /** The image the release's creator chose (the one serving, for a configuration release), if it can still run. */
  private async chosenImage(imageId: string) {
    const image = await this.images.findById(imageId);
    if (!image?.built) return undefined;
    if (image.collected_at)
      throw new ReleaseError(`Image v${image.version} was garbage-collected: deploy with a build (\`slipway deploy\`) instead`);
    return image;
  }

  async run(releaseId: string): Promise<{ ok: boolean }> {
    const release = await this.releases.findById(releaseId);
    if (!release || release.status !== 'building') return { ok: release?.built ?? false };
    const app = await this.apps.find(release.application_id);
    if (!app) return { ok: false };
    await this.releases.update(release.id, { started_at: new Date() });

    let log = new RecordLog(this.ctx.db, 'releases', release.id, [], this.ctx.logger);
    try {
      log.enter('Resolve', 'Image and configuration');
      const { preview } = await environmentTrust(this.ctx.db, release.environment_id);
      const image = release.image_ref
        ? await this.chosenImage(release.image_ref)
        : await this.images.latestBuilt(app.id, release.environment_id, preview);
      if (!image) throw new ReleaseError('No built image: build the application first (POST /images/{application_id}/build)');
      log.line(`Image v${image.version} ${image.image_id} (commit ${image.commit_sha?.slice(0, 12) ?? 'unknown'})`);
      const resolved = await resolveServiceConfig(this.ctx.db, this.configs, app.id, release.environment_id);
      // From here on the log knows the secret values it must hide.
      await log.flush();
      log = new RecordLog(
        this.ctx.db,
        'releases',
        release.id,
        resolved.filter((v) => v.secret).map((v) => v.value),
        this.ctx.logger,
      );
      log.line(`Configuration: ${resolved.length} variable(s)${resolved.length ? `: ${resolved.map((v) => v.name).join(', ')}` : ''}`);

      log.enter('Build', 'Process settings');
      const settings = await effectiveProcessSettings(this.ctx.db, app.id, release.environment_id);
      const display = displayConfiguration(resolved);
      const sealed = sealConfiguration(this.ctx.secrets, resolved);
      const processes = withStartCommand(image.processes ?? {}, app.start_command);
      if (app.start_command) log.line("web: start command from the application's settings");
      log.line(describeProcessSettings(settings.process_counts, processes));

      log.enter('Export', 'Changes');
      const previous = await this.releases.previousBuilt(app.id, release.environment_id, release.version);
      const currentValues = Object.fromEntries(resolved.map((v) => [v.name, v.value]));
      const configurationChanges = diff(
        previous ? frozenFingerprints(this.ctx.secrets, previous) : null,
        configurationFingerprints(currentValues, display),
      );
      const imageChanges = diff(previous ? imageFingerprints(previous) : null, imageFingerprints(image));
      log.line(previous ? `Compared with release v${previous.version}` : 'First release');
      log.line(describeChanges('Image changes', imageChanges));
      log.line(describeChanges('Configuration changes', configurationChanges));

      log.enter('Push', 'Saving');
      await this.releases.update(release.id, {
        image_ref: image.id,
        commit_sha: image.commit_sha,
        configuration: JSON.stringify(display),
        configuration_sealed: sealed,
        process_counts: JSON.stringify(settings.process_counts),
        process_pod_classes: JSON.stringify(settings.process_pod_classes),
        processes: JSON.stringify(processes),
        health_check_path: app.health_check_path,
        health_check_host: app.health_check_host,
        deployment_timeout: app.deployment_timeout,
        image_changes: JSON.stringify(imageChanges),
        configuration_changes: JSON.stringify(configurationChanges),
        release_metadata: JSON.stringify({
          image_version: image.version,
          image_id: image.image_id,
          build_ref: image.build_ref,
          previous_release_version: previous?.version ?? null,
          variables: resolved.length,
        }),
      });

      log.line('Image, configuration (secrets sealed) and process settings frozen into the release');
      log.enter('Done');
      log.line(`Release v${release.version} created`);
      await log.flush();
      await this.releases.update(release.id, {
        status: 'built',
        built: true,
        error: false,
        error_detail: null,
        error_code: null,
        finished_at: new Date(),
      });
      return { ok: true };
    } catch (err) {
      const detail = err instanceof ReleaseError ? err.message : `internal error while creating the release: ${(err as Error).message}`;
      log.line(`Release failed: ${detail}`);
      await log.flush();
      await this.releases.update(release.id, {
        status: 'error',
        error: true,
        built: false,
        error_detail: log.scrub(detail),
        error_code: failureCodeOf(err),
        finished_at: new Date(),
      });
      return { ok: false };
    }
  }
}

/**
 * The application's start command, when set, replaces the web process's command (its
 * environment stays the image's): frozen here, so that image deploys and built images alike
 * run it and a change of it needs only a new release, no build.
 */
function withStartCommand(processes: ProcessDefinitions, startCommand: string | null): ProcessDefinitions {
  if (!startCommand) return processes;
  return { ...processes, web: { env: processes.web?.env ?? {}, cmd: startCommand } };
}

/** The instance count of each process type the release starts with, saying which are defaults (web 1, others 0). */
function describeProcessSettings(counts: Record<string, number>, processes: Record<string, unknown>): string {
  const types = [...new Set([...Object.keys(processes), ...Object.keys(counts)])].filter((t) => t !== 'release' && t !== 'postdeploy');
  if (types.length === 0) return 'Processes: none defined (no Procfile or start command)';
  const shown = types.map((t) => (t in counts ? `${t}=${counts[t]}` : `${t}=${t === 'web' ? 1 : 0} (default)`));
  const idle = types.filter((t) => (counts[t] ?? (t === 'web' ? 1 : 0)) === 0);
  return `Processes: ${shown.join(' ')}${idle.length ? `; at 0, start with: slipway scale ${idle.map((t) => `${t}=1`).join(' ')}` : ''}`;
}
