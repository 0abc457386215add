import type { AppContext } from '../../platform/context.js';
import { conflict } from '../../platform/errors.js';
import { requireDeployAccess } from '../../platform/access/environment-protection.js';
import type { ApplicationsService } from '../../modules/applications/index.js';
import { resolveServiceConfig, type ConfigurationsService } from '../../modules/configurations/index.js';
import { productionEnvironmentId } from '../records/index.js';
import { openConfiguration, type DisplayedVariable } from './release-freezer.js';
import type { ReleasesService } from './releases.service.js';

/**
 * `POST /applications/{id}/config-release`: a configuration change goes live as a new release
 * on the image already built, deployed at once, with no build (the release and deploy jobs
 * queue one behind the other in the application's queue). Only runtime variables: a changed
 * build-time variable needs a build (`POST /applications/{id}/deploy`), so it is refused (409).
 */
export class ConfigRelease {
  constructor(
    private readonly ctx: AppContext,
    private readonly apps: ApplicationsService,
    private readonly configs: ConfigurationsService,
    private readonly releases: ReleasesService,
    private readonly deploy: (applicationId: string, environmentId: string, releaseId: string) => Promise<{ deployment_id: string }>,
    private readonly servingImage: (applicationId: string, environmentId: string) => Promise<string | null>,
  ) {}

  async request(userId: string, applicationId: string) {
    await this.apps.authorize(userId, applicationId);
    const environmentId = await productionEnvironmentId(this.ctx.db, applicationId);
    await requireDeployAccess(this.ctx.db, userId, environmentId);
    // The image serving now (after a rollback: the one rolled back to, as on Heroku), else the newest built.
    const serving = await this.servingImage(applicationId, environmentId);
    const image = await this.ctx.db
      .selectFrom('images')
      .select(['id', 'version'])
      .where('application_id', '=', applicationId)
      .where('built', '=', true)
      .where('collected_at', 'is', null)
      .$if(serving !== null, (q) => q.where('id', '=', serving!))
      .orderBy('version', 'desc')
      .limit(1)
      .executeTakeFirst();
    if (!image)
      throw conflict('No built image yet: deploy the application first (`slipway deploy`); later configuration changes need no build');
    const changed = await this.buildtimeChanges(applicationId, environmentId, image.id);
    if (changed.length > 0)
      throw conflict(
        `Build-time variable${changed.length > 1 ? 's' : ''} ${changed.join(', ')} changed since image v${image.version} was built: ` +
          'deploy with a build (`slipway deploy`) instead',
      );
    const release = await this.releases.queueRelease(applicationId, environmentId, image.id);
    const { deployment_id } = await this.deploy(applicationId, environmentId, release.id);
    return { ok: true, release_id: release.id, version: release.version, deployment_id, image_id: image.id };
  }

  /** Build-time variables whose value differs from what the image's newest release froze (the values it was built with). */
  private async buildtimeChanges(applicationId: string, environmentId: string, imageId: string): Promise<string[]> {
    const frozen = await this.ctx.db
      .selectFrom('releases')
      .select(['configuration', 'configuration_sealed'])
      .where('image_ref', '=', imageId)
      .where('built', '=', true)
      .orderBy('version', 'desc')
      .limit(1)
      .executeTakeFirst();
    const current = (await resolveServiceConfig(this.ctx.db, this.configs, applicationId, environmentId)).filter((v) => v.buildtime);
    if (!frozen) return current.map((v) => v.name);
    const values = openConfiguration(this.ctx.secrets, frozen.configuration_sealed);
    const before = new Set(((frozen.configuration ?? []) as DisplayedVariable[]).filter((v) => v.buildtime).map((v) => v.name));
    const changed = current.filter((v) => !before.has(v.name) || values[v.name] !== v.value).map((v) => v.name);
    const removed = [...before].filter((name) => !current.some((v) => v.name === name));
    return [...changed, ...removed].sort();
  }
}
