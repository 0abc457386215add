import { failureCodeOf } from '../../platform/failures.js';
import { countDiskFull, diskSpace, isDiskFull } from '../../platform/storage/disk-space.js';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import {
  BuildError,
  chooseBuilder,
  isImagePuller,
  MAX_PROCFILE_BYTES,
  parseProcfile,
  readContextFile,
  type Builder,
  type BuildOutput,
  type CacheScope,
} from '../../platform/builder/index.js';
import { pullSourceImage } from './image-pull.js';
import { chmodBeneath } from '../../platform/fs/beneath.js';
import { privateDir } from '../../platform/fs/private-dir.js';
import type { AppContext } from '../../platform/context.js';
import { fetchSource, SourceError } from '../../platform/git/source.js';
import { checkSourceAtBuild } from '../../platform/git/trusted-sources.js';
import { pushRepositoryDir } from '../../platform/git/push-repository.js';
import { ManifestCronError, readManifestCron } from '../../platform/cron/manifest.js';
import { GitHubApp, GitHubAppError } from '../../platform/github/github-app.js';
import { repositoryFullName } from '../../platform/github/github-api.js';
import { GitHubInstallations } from '../../platform/github/installations.js';
import { installationRefusal, isInstallationOf } from '../../platform/github/installation-links.js';
import type { ApplicationsService } from '../../modules/applications/index.js';
import type { ConfigurationsService } from '../../modules/configurations/index.js';
import { resolveServiceConfig } from '../../modules/configurations/index.js';
import { environmentTrust, productionEnvironmentId } from '../records/index.js';
import { RecordLog } from '../records/index.js';
import type { ImagesRepository } from './images.repository.js';
import { buildTimeoutSeconds } from '../../modules/organizations/index.js';

/** Scratch space of one build (removed when it ends): the platform's (0711), the checkout below it owner-only. */
export const buildWorkDir = (dataDir: string, imageId: string) => join(dataDir, 'builds', imageId);
/** Where an application's built images' artifacts live (one directory per version). */
export const applicationArtifactsDir = (dataDir: string, applicationId: string) => join(dataDir, 'images', applicationId);
/** Where a built image's artifact lives. */
export const artifactDir = (dataDir: string, applicationId: string, version: number) =>
  join(applicationArtifactsDir(dataDir, applicationId), String(version));

/** The throwaway cache scope of a preview's build (removed when the build ends, or when it is settled as interrupted). */
export const previewCacheScope = (imageId: string): CacheScope => ({ name: `preview-${imageId}`, throwaway: true });

export const ABANDONED = 'abandoned: its pipeline job is no longer queued or running (the server stopped at the wrong moment); build again';
export const INTERRUPTED_BY_RESTART = 'interrupted by a restart: the worker running this build stopped before it finished; build again';

/**
 * Runs one image build: fetch the ref, read the Procfile, build through the builder
 * port with the build-time configuration, and record the outcome. Build failures are
 * recorded on the image (status `error`, a clear `error_detail`), never thrown.
 */
export class BuildRunner {
  private readonly images: ImagesRepository;
  /** Installation tokens for private repositories (cached across builds). */
  private readonly githubApp: GitHubApp;

  constructor(
    private readonly ctx: AppContext,
    images: ImagesRepository,
    private readonly apps: Pick<ApplicationsService, 'find'>,
    private readonly configs: ConfigurationsService,
    private readonly builders: Builder[],
  ) {
    this.images = images;
    this.githubApp = new GitHubApp(ctx.config);
  }

  /** The clone credential of a private repository: a fresh installation token of its GitHub App installation. */
  private async privateRepositoryToken(app: {
    organization_id: string;
    github_repository: string | null;
    github_repository_is_private: boolean;
    github_app_installation_id: number | null;
  }) {
    if (!app.github_repository_is_private) return undefined;
    if (app.github_app_installation_id === null) {
      throw new BuildError(
        'The repository is private and the application has no GitHub App installation: install the App on the repository, ' +
          'then set github_app_installation_id with PATCH /applications/{id}/settings',
      );
    }
    // Checked again at build time: the link may have been removed since the setting was saved.
    if (!(await isInstallationOf(this.ctx.db, app.github_app_installation_id, app.organization_id))) {
      throw new BuildError(installationRefusal(app.github_app_installation_id));
    }
    // What GitHub's installation hooks said the installation covers (unknown installations are not judged).
    const repository = repositoryFullName(app.github_repository);
    if (repository && (await new GitHubInstallations(this.ctx.db).covers(app.github_app_installation_id, repository)) === false) {
      throw new BuildError(
        `The GitHub App installation ${app.github_app_installation_id} does not cover ${repository}: ` +
          'add the repository to the installation on GitHub (its installation_repositories hook updates this)',
      );
    }
    try {
      return await this.githubApp.installationToken(app.github_app_installation_id);
    } catch (err) {
      if (err instanceof GitHubAppError) throw new BuildError(`Cannot clone the private repository: ${err.message}`);
      throw err;
    }
  }

  async run(imageId: string, signal: AbortSignal): Promise<{ ok: boolean }> {
    const image = await this.images.findById(imageId);
    if (!image || image.status !== 'building') return { ok: image?.built ?? false };
    const app = await this.apps.find(image.application_id);
    if (!app) return { ok: false };

    // The environment the build is for: its configuration (a fork's preview: only what is marked
    // for previews) and its own cache scope; a preview's is thrown away when the build ends.
    const environmentId = image.environment_id ?? (await productionEnvironmentId(this.ctx.db, app.id));
    const trust = await environmentTrust(this.ctx.db, environmentId);
    const cacheScope = trust.preview ? previewCacheScope(image.id) : { name: `env-${environmentId}`, throwaway: false };
    const config = await resolveServiceConfig(this.ctx.db, this.configs, app.id, environmentId);
    const secrets = config.filter((v) => v.secret).map((v) => v.value);
    const buildEnv = Object.fromEntries(config.filter((v) => v.buildtime).map((v) => [v.name, v.value]));
    const log = new RecordLog(this.ctx.db, 'images', image.id, secrets, this.ctx.logger);

    const workDir = buildWorkDir(this.ctx.config.dataDir, image.id);
    const artifact = artifactDir(this.ctx.config.dataDir, app.id, image.version);
    await this.images.update(image.id, { started_at: new Date() });
    let builder: Builder | null = null;
    try {
      log.enter('Resolve');
      if (trust.preview)
        log.line(`Preview of a pull request (${trust.previewTrust}): configuration ${trust.configuration}; throwaway build cache`);
      // Sandbox users pass through to their own trees below; none can list or write these.
      for (const dir of [join(this.ctx.config.dataDir, 'builds'), join(this.ctx.config.dataDir, 'images'), workDir]) {
        await privateDir(dir, 0o711);
      }
      let output: BuildOutput;
      let sourceLabel: string;
      let cron: Awaited<ReturnType<typeof readManifestCron>> = null;
      if (image.source_image) {
        // An image deploy: nothing is fetched or built, the pinned image is pulled and unpacked.
        sourceLabel = image.source_image;
        // The driver that pulls keeps the layers in the cache scope's storage: a preview's is discarded below like a build's.
        builder = this.builders.find(isImagePuller) ?? null;
        const digest = image.source_image.slice(image.source_image.lastIndexOf('@sha256:') + 8);
        await this.images.update(image.id, { build_slug: `v${image.version}-${digest.slice(0, 7)}` });
        output = await pullSourceImage(this.ctx, this.builders, {
          image,
          applicationId: app.id,
          artifactDir: artifact,
          cacheScope,
          log,
          signal,
          timeoutMs: (await buildTimeoutSeconds(this.ctx, app.id)) * 1000,
        });
      } else {
        if (!app.github_repository && !image.pushed) {
          throw new BuildError('The application has no github_repository: set it with PATCH /applications/{id}/settings');
        }
        const ref = image.build_ref ?? app.auto_deploy_branch ?? 'HEAD';
        const contextDir = join(workDir, 'context');
        // A pushed commit is read from the platform's own repository of the application (never a member's path).
        const pushed = image.pushed ? pushRepositoryDir(this.ctx.config.dataDir, app.id) : null;
        const pins = pushed ? undefined : await checkSourceAtBuild(this.ctx.db, this.ctx.config, app.id, app.github_repository!);
        const token = pushed ? undefined : await this.privateRepositoryToken(app);
        if (token) log.line('Cloning with a GitHub App installation token');
        const source = await fetchSource({
          pins,
          token,
          repository: pushed ?? app.github_repository!,
          ...(pushed ? { label: 'the pushed repository (git push)' } : {}),
          ref,
          subdirectory: app.subdirectory,
          githubUrl: this.ctx.config.GITHUB_URL,
          localRoots: pushed
            ? [pushed]
            : this.ctx.config.LOCAL_REPOSITORY_ROOTS?.split(',')
                .map((r) => r.trim())
                .filter(Boolean),
          workDir,
          destination: contextDir,
          maxBytes: this.ctx.config.SOURCE_MAX_MB * 1024 * 1024,
          signal,
          onLine: (l) => log.line(l),
        });
        // The checkout is the member's: owner-only, and read without following its symlinks.
        await chmodBeneath(workDir, 'context', 0o700);
        const procfile = await readContextFile(contextDir, 'Procfile', MAX_PROCFILE_BYTES);
        const procfileProcesses = procfile === null ? null : parseProcfile(procfile);
        if (procfileProcesses) log.line(`Procfile: ${Object.keys(procfileProcesses).join(', ')}`);
        cron = await readManifestCron(contextDir, this.ctx.config.CRON_SECONDS_FIELD).catch((err) => {
          throw err instanceof ManifestCronError ? new BuildError(err.message) : err;
        });
        if (cron) log.line(`Cron (slipway.json): ${cron.map((c) => `${c.name} "${c.schedule}"`).join(', ') || 'none'}`);
        await this.images.update(image.id, {
          commit_sha: source.commitSha,
          procfile,
          build_slug: `v${image.version}-${source.commitSha.slice(0, 7)}`,
        });
        const buildVars = Object.keys(buildEnv);
        log.line(buildVars.length ? `Build-time variables: ${buildVars.join(', ')}` : 'No build-time variables');

        log.enter('Build');
        builder = await chooseBuilder(this.builders, contextDir);
        log.line(`Builder: ${builder.name}${builder.chosenBecause ? ` (${builder.chosenBecause})` : ''}`);
        output = await builder.build({
          applicationId: app.id,
          version: image.version,
          repositoryName: image.repository_name,
          contextDir,
          artifactDir: artifact,
          buildEnv,
          secrets,
          procfileProcesses,
          log: { line: (l) => log.line(l), substep: (s) => log.substep(s) },
          cacheScope,
          signal,
          timeoutMs: (await buildTimeoutSeconds(this.ctx, app.id)) * 1000,
        });
        sourceLabel = source.displayUrl;
      }

      log.enter('Export');
      log.line(`Image ${output.imageId}`);
      log.line(
        `Processes: ${Object.entries(output.processes)
          .map(([n, p]) => `${n}=${p.cmd}`)
          .join('; ')}`,
      );

      log.enter('Push');
      log.line(`Stored at ${output.artifactPath}`);

      log.enter('Done');
      log.line(`Build succeeded in ${log.elapsed()}`);
      await log.flush();
      await this.images.update(image.id, {
        status: 'built',
        built: true,
        error: false,
        error_detail: null,
        error_code: null,
        image_id: output.imageId,
        dockerfile: output.dockerfile,
        processes: JSON.stringify(output.processes),
        cron: cron ? JSON.stringify(cron) : null,
        image_metadata: JSON.stringify({
          ...output.imageMetadata,
          source: sourceLabel,
          subdirectory: app.subdirectory,
          cache_scope: cacheScope.throwaway ? 'throwaway' : 'environment',
          configuration: trust.configuration,
        }),
        artifact_path: output.artifactPath,
        finished_at: new Date(),
      });
      return { ok: true };
    } catch (err) {
      const known = err instanceof BuildError || err instanceof SourceError;
      // Out of space is the platform's condition, not the member's build: said so, and counted for the operator.
      const diskFull = !signal.aborted && (isDiskFull(err) || (await diskSpace(this.ctx.config.dataDir, 0)).state === 'full');
      if (diskFull) countDiskFull('build');
      const detail = signal.aborted
        ? 'interrupted: the server stopped during the build; build again'
        : diskFull
          ? `the platform's disk is full: the build stopped and nothing of it was kept; build again once the operator frees space (${(err as Error).message})`
          : known
            ? (err as Error).message
            : `internal error while building: ${(err as Error).message}`;
      log.line(`Build failed: ${detail}`);
      await log.flush();
      await this.images.update(image.id, {
        status: 'error',
        error: true,
        built: false,
        error_detail: log.scrub(detail),
        error_code: signal.aborted ? 'interrupted' : diskFull ? 'disk_full' : failureCodeOf(err),
        finished_at: new Date(),
      });
      await rm(artifact, { recursive: true, force: true });
      return { ok: false };
    } finally {
      await rm(workDir, { recursive: true, force: true });
      if (builder && cacheScope.throwaway)
        await builder.discardCacheScope(app.id, cacheScope).catch((err: unknown) => {
          this.ctx.logger?.error({ err }, 'removing a throwaway build cache failed');
        });
    }
  }
}
