import { v7 as uuidv7 } from 'uuid';
import type { Db } from '../../platform/db/database.js';
import { conflict, forbidden, invalid, isUniqueViolation, notFound } from '../../platform/errors.js';
import { iso } from '../../platform/http/schemas.js';
import { slugFor } from '../../platform/slug.js';
import { requireInstallationOf } from '../../platform/github/installation-links.js';
import { requireBranchChangeAccess, requireProtectedEnvironmentAdmin } from '../../platform/access/environment-protection.js';
import { ProjectsService } from '../projects/index.js';
import type { ApplicationsRepository } from './applications.repository.js';
import type { Static } from 'typebox';
import type { ScaleBody, SettingsBody } from './applications.schemas.js';

export type ApplicationRow = NonNullable<Awaited<ReturnType<ApplicationsRepository['findById']>>>;

/**
 * The pipeline's latest records for an application, supplied by the pipeline module
 * (the control plane alone has none: every field is null).
 */
export interface LatestRecords {
  latest_image: { id: string; version: number; built: boolean; error: boolean; created: string } | null;
  latest_release: { id: string; version: number; built: boolean; error: boolean; created: string; environment: string } | null;
  latest_deployment: {
    id: string;
    release_version: number | null;
    complete: boolean;
    error: boolean;
    created: string;
    environment: string;
  } | null;
}
/**
 * Latest records of each application, in every environment or in the one of slug
 * `environmentSlug`; an application whose project has no such environment is left out.
 */
export type LatestRecordsSource = (applicationIds: string[], environmentSlug?: string) => Promise<Map<string, LatestRecords>>;
const noRecords: LatestRecordsSource = async () => new Map();
/**
 * The application detail by its slugs, for a member, with its latest records in one read, as the answer's
 * JSON text (the detail's hot path, supplied by the pipeline); undefined when anything is missing or the
 * caller is no member, and the detail then finds out which on its own.
 */
export type ApplicationDetailSource = (
  userId: string,
  orgSlug: string,
  projectSlug: string,
  appSlug: string,
) => Promise<string | undefined>;
const NONE: LatestRecords = { latest_image: null, latest_release: null, latest_deployment: null };

/** Refuses a `github_repository` the user may not build from (the source policy, issue 10). */
export type RepositoryVetter = (change: { userId: string; applicationId: string; repository: string | null }) => Promise<void>;

/** Told after a scale so running instances follow the new counts. */
export type ScaleListener = (applicationId: string) => Promise<void>;

export class ApplicationsService {
  private readonly apps: ApplicationsRepository;
  private readonly projects: ProjectsService;

  constructor(
    private readonly db: Db,
    apps: ApplicationsRepository,
    projects: ProjectsService,
    private readonly latest: LatestRecordsSource = noRecords,
    private readonly onScaled: ScaleListener = async () => {},
    private readonly vetRepository: RepositoryVetter = async () => {},
    private readonly detailSource: ApplicationDetailSource | null = null,
  ) {
    this.apps = apps;
    this.projects = projects;
  }

  /** The application with its organization and project slugs, for pipeline workers (they act for no caller). */
  find(applicationId: string) {
    return this.apps.findById(applicationId);
  }

  /** The application row, once the caller is known to be a member of its organization. */
  async authorize(userId: string, applicationId: string): Promise<ApplicationRow> {
    // The membership rule of OrganizationAccess, checked in the same query as the lookup
    // (every per-application route passes here, so it is the hottest path).
    const found = await this.apps.findByIdForUser(applicationId, userId);
    if (!found) throw notFound('Application');
    if (!found.is_member) throw forbidden();
    const { is_member: _member, ...app } = found;
    return app;
  }

  /** One page of the project's applications by slug, and whether another page follows. */
  async list(userId: string, orgSlug: string, projectSlug: string, page: { page: number; per_page: number }) {
    const project = await this.projects.resolve(userId, orgSlug, projectSlug);
    // One row more than the page tells whether a next page exists, without counting the project.
    const found = await this.apps.listByProject(project.id, page.per_page + 1, (page.page - 1) * page.per_page);
    const rows = found.slice(0, page.per_page);
    const latest = await this.latest(rows.map((r) => r.id));
    const items = rows.map((a) => {
      const l = latest.get(a.id) ?? NONE;
      return {
        id: a.id,
        name: a.name,
        slug: a.slug,
        project_id: a.project_id,
        platform: a.platform,
        created: iso(a.created_at),
        latest_image_version: l.latest_image?.version ?? null,
        latest_release_version: l.latest_release?.version ?? null,
        latest_deployment_complete: l.latest_deployment?.complete ?? null,
      };
    });
    return { items, hasMore: found.length > page.per_page };
  }

  /**
   * The detail (latest records of every environment) as its JSON text, in one read, when the caller is a
   * member and every level exists; else undefined, and `detailBySlugs` tells the 404 or 403.
   */
  async detailJsonBySlugs(userId: string, orgSlug: string, projectSlug: string, appSlug: string): Promise<string | undefined> {
    return this.detailSource?.(userId, orgSlug, projectSlug, appSlug);
  }

  async detailBySlugs(userId: string, orgSlug: string, projectSlug: string, appSlug: string, environmentSlug?: string) {
    const found = await this.apps.findBySlugsForUser(orgSlug, projectSlug, appSlug, userId);
    if (!found) throw notFound('Organization');
    if (!found.member_id) throw forbidden();
    if (!found.found_project_id) throw notFound('Project');
    if (!found.id) throw notFound('Application');
    const { member_id: _member, found_project_id: _project, ...app } = found;
    // Every application column is present once `id` is: the left join matched a row.
    return this.describe(app as ApplicationRow, environmentSlug);
  }

  /** The application with its latest records (in every environment, or in the one of slug `environmentSlug`). */
  async describe(app: ApplicationRow, environmentSlug?: string) {
    const latest = await this.latest([app.id], environmentSlug);
    if (environmentSlug !== undefined && this.latest !== noRecords && !latest.has(app.id)) {
      throw notFound(`Environment '${environmentSlug}' of the application's project`);
    }
    return this.shape(app, latest.get(app.id) ?? NONE);
  }

  private shape(app: ApplicationRow, l: LatestRecords) {
    return {
      id: app.id,
      name: app.name,
      slug: app.slug,
      project_id: app.project_id,
      project_slug: app.project_slug,
      organization_slug: app.organization_slug,
      platform: app.platform,
      process_counts: app.process_counts,
      process_pod_classes: app.process_pod_classes,
      github_repository: app.github_repository,
      github_repository_is_private: app.github_repository_is_private,
      auto_deploy_branch: app.auto_deploy_branch,
      subdirectory: app.subdirectory,
      github_app_installation_id: app.github_app_installation_id === null ? null : Number(app.github_app_installation_id),
      github_environment_name: app.github_environment_name,
      deployment_timeout: app.deployment_timeout,
      health_check_path: app.health_check_path,
      health_check_host: app.health_check_host,
      health_check_timeout: app.health_check_timeout,
      stability_window: app.stability_window,
      privileged: app.privileged,
      start_command: app.start_command,
      created: iso(app.created_at),
      updated: iso(app.updated_at),
      ...l,
    };
  }

  private async reload(id: string) {
    return this.describe((await this.apps.findById(id))!);
  }

  async create(userId: string, input: { name: string; slug?: string; project_id: string; platform?: string }) {
    const project = await this.projects.resolveById(userId, input.project_id);
    // A new service of the project is deployed by the project's next environment deploy.
    await requireProtectedEnvironmentAdmin(this.db, userId, { projectId: project.id }, 'the services of its project');
    const slug = slugFor(input.name, input.slug);
    try {
      const { id } = await this.apps.insert({
        id: uuidv7(),
        project_id: project.id,
        name: input.name,
        slug,
        platform: input.platform ?? 'wind',
      });
      return this.reload(id);
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict(`An application with slug '${slug}' already exists in ${project.slug}`);
      throw err;
    }
  }

  async updateSettings(userId: string, applicationId: string, settings: Static<typeof SettingsBody>) {
    const app = await this.authorize(userId, applicationId);
    if (settings.github_repository !== undefined)
      await this.vetRepository({ userId, applicationId: app.id, repository: settings.github_repository });
    // An installation id is a number anyone can type: only the organization's own installations (issue 27).
    if (typeof settings.github_app_installation_id === 'number')
      await requireInstallationOf(this.db, settings.github_app_installation_id, app.organization_id);
    if (settings.auto_deploy_branch !== undefined && settings.auto_deploy_branch !== app.auto_deploy_branch) {
      await requireBranchChangeAccess(this.db, userId, { applicationId: app.id });
    }
    // Every setting shapes what a protected environment builds or how it deploys it; sending a value unchanged changes nothing.
    const changed = Object.entries(settings).filter(([field, value]) => value !== (app as Record<string, unknown>)[field]);
    if (changed.length > 0) {
      await requireProtectedEnvironmentAdmin(
        this.db,
        userId,
        { applicationId: app.id },
        `the settings of an application it runs (${changed.map(([f]) => f).join(', ')})`,
      );
    }
    if (Object.keys(settings).length > 0) await this.apps.updateSettings(app.id, settings);
    return this.reload(app.id);
  }

  async scale(userId: string, applicationId: string, input: Static<typeof ScaleBody>) {
    const app = await this.authorize(userId, applicationId);
    await requireProtectedEnvironmentAdmin(
      this.db,
      userId,
      { applicationId: app.id },
      'the scale or pod classes of an application it runs',
    );
    await refuseScaledVolumes(this.db, app.id, input.process_counts ?? {});
    await this.apps.mergeScale(app.id, input.process_counts ?? {}, input.process_pod_classes ?? {});
    await this.onScaled(app.id);
    return this.reload(app.id);
  }
}

/**
 * One disk is written by one instance: a process type that mounts a persistent volume
 * (src/modules/volumes, a read of its table) is not scaled above 1.
 */
async function refuseScaledVolumes(db: Db, applicationId: string, counts: Record<string, number>) {
  const scaledUp = Object.entries(counts)
    .filter(([, n]) => n > 1)
    .map(([type]) => type);
  if (scaledUp.length === 0) return;
  const volume = await db
    .selectFrom('volumes')
    .select(['name', 'process_type'])
    .where('application_id', '=', applicationId)
    .where('process_type', 'in', scaledUp)
    .executeTakeFirst();
  if (volume)
    throw invalid(
      'process_counts',
      `${volume.process_type} mounts volume '${volume.name}', which one instance only can write: it stays at 1 (delete the volume to scale out)`,
    );
}
