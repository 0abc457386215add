import type { Db } from '../../platform/db/database.js';
import type { Jobs } from '../../platform/jobs/index.js';
import { conflict, invalid } from '../../platform/errors.js';
import { isoOrNull } from '../../platform/http/schemas.js';
import { routeHostname } from '../../platform/edge/route-hostname.js';
import { normalizeRepository } from '../../platform/github/github-api.js';
import { previewConfiguration } from '../../platform/environments/index.js';
import { hookOrganizations } from '../../platform/github/installation-links.js';
import { deleteEnvironment, stopEnvironment } from '../environments/index.js';
import { OrganizationScope } from '../organizations/index.js';
import { PreviewsRepository } from './previews.repository.js';

/** Starts build → release → deploy of a service in an environment (the deployments module's chain). */
export type PreviewChainStarter = (applicationId: string, ref: string | null, environmentId: string) => Promise<{ image_id: string }>;

/** What a `pull_request` hook says, as the github module reads it. */
export interface PullRequestEvent {
  action: string;
  number: number;
  headSha: string;
  /** `owner/name` (for commit statuses). */
  repository: string;
  /** Every address of the repository (full name, clone, ssh, html URLs), to match applications' `github_repository`. */
  repositoryNames: string[];
  installationId: number | null;
  /** `owner/name` of the head's repository, when GitHub knows it. */
  headRepository: string | null;
  /** The head is a fork's: the preview gets only configuration marked for previews. */
  fromFork: boolean;
  /** GitHub's `repository.private`: its hooks reach only the organization of its installation. */
  repositoryPrivate?: boolean;
}

export interface PreviewSettingsInput {
  template_environment: string;
  max_concurrent?: number;
  copy_secrets?: boolean;
}

export const previewSlug = (number: number) => `pr-${number}`;

/**
 * Preview environments: a project opts in with a template environment; each pull request of
 * a repository its services build from gets environment `pr-<number>`, created from the
 * template, deployed at the head commit on every push, and deleted when the pull request
 * closes. Past the project's cap the least recently active preview is stopped.
 */
export class PreviewsService {
  private readonly repo: PreviewsRepository;
  private readonly scope: OrganizationScope;

  constructor(
    private readonly db: Db,
    repo: PreviewsRepository,
    private readonly jobs: Jobs | undefined,
    private readonly startChain: PreviewChainStarter,
    private readonly settingsOf: { routerDomain: string; urlOf: (hostname: string) => string },
    scope: OrganizationScope,
  ) {
    this.repo = repo;
    this.scope = scope;
  }

  private describeSettings(row: Awaited<ReturnType<PreviewsRepository['settings']>>) {
    return row
      ? { enabled: true, template_environment: row.template_slug, max_concurrent: row.max_concurrent, copy_secrets: row.copy_secrets }
      : { enabled: false, template_environment: null, max_concurrent: null, copy_secrets: false };
  }

  /** `GET .../previews`: the settings and the live previews, each with its services' URLs. */
  async get(userId: string, ws: string, projectSlug: string) {
    const { organization, project } = await this.scope.project(userId, ws, projectSlug);
    const [settings, previews, services] = await Promise.all([
      this.repo.settings(project.id),
      this.repo.list(project.id),
      this.db.selectFrom('applications').select('slug').where('project_id', '=', project.id).orderBy('slug').execute(),
    ]);
    return {
      settings: this.describeSettings(settings),
      previews: previews.map((p) => ({
        environment: p.slug,
        pr_number: p.pr_number,
        repository: p.repository,
        head_sha: p.head_sha,
        head_repository: p.head_repository,
        trust: p.trust,
        configuration: previewConfiguration(p.trust),
        stopped: p.stopped_at !== null,
        active: isoOrNull(p.active_at)!,
        created: isoOrNull(p.created_at)!,
        urls: Object.fromEntries(services.map((s) => [s.slug, this.urlOf(s.slug, p.slug, project.slug, organization.slug)])),
      })),
    };
  }

  private urlOf(appSlug: string, envSlug: string, projectSlug: string, orgSlug: string) {
    const hostname = routeHostname({ appSlug, envSlug, projectSlug, orgSlug, isProduction: false }, this.settingsOf.routerDomain);
    return this.settingsOf.urlOf(hostname);
  }

  /**
   * `PUT .../previews`: turns previews on with a template environment. Copying the template's
   * secrets into every pull request's environment, or using a protected template, is an
   * organization admin's choice.
   */
  async configure(userId: string, ws: string, projectSlug: string, input: PreviewSettingsInput) {
    const { organization, project } = await this.scope.project(userId, ws, projectSlug);
    const template = await this.db
      .selectFrom('environments')
      .select(['id', 'slug', 'protected', 'env_type'])
      .where('project_id', '=', project.id)
      .where('slug', '=', input.template_environment)
      .where('deleted_at', 'is', null)
      .executeTakeFirst();
    if (!template) throw invalid('template_environment', `no environment '${input.template_environment}' in project ${project.slug}`);
    if (await this.repo.byEnvironment(template.id)) throw invalid('template_environment', 'a preview environment cannot be the template');
    if (input.copy_secrets || template.protected) await this.scope.requireAdmin(userId, organization.id);
    await this.repo.saveSettings({
      project_id: project.id,
      template_environment_id: template.id,
      max_concurrent: input.max_concurrent ?? 5,
      copy_secrets: input.copy_secrets ?? false,
    });
    return this.get(userId, ws, projectSlug);
  }

  /** `DELETE .../previews`: no new previews; the existing ones live until their pull requests close. */
  async disable(userId: string, ws: string, projectSlug: string) {
    const { project } = await this.scope.project(userId, ws, projectSlug);
    await this.repo.clearSettings(project.id);
  }

  /** A signed `pull_request` hook: what it did, per project, for the hook record. */
  async pullRequest(event: PullRequestEvent) {
    const results: Array<Record<string, unknown>> = [];
    const opening = ['opened', 'reopened', 'synchronize'].includes(event.action);
    if (!opening && event.action !== 'closed') return results;
    const names = new Set(event.repositoryNames.map(normalizeRepository));
    const audience = await hookOrganizations(this.db, { private: event.repositoryPrivate }, event.installationId);
    if (audience && audience.only === null) return results;
    const candidates = await this.db
      .selectFrom('applications as a')
      .innerJoin('preview_settings as s', 's.project_id', 'a.project_id')
      .innerJoin('projects as p', 'p.id', 'a.project_id')
      .select(['a.id', 'a.project_id', 'a.github_repository'])
      .where('a.github_repository', 'is not', null)
      .$if(audience !== null, (q) => q.where('p.organization_id', '=', audience!.only!))
      .execute();
    const projects = new Map<string, string[]>();
    for (const app of candidates) {
      if (!names.has(normalizeRepository(app.github_repository!))) continue;
      projects.set(app.project_id, [...(projects.get(app.project_id) ?? []), app.id]);
    }
    for (const [projectId, sourceApps] of projects) {
      try {
        results.push(opening ? await this.open(projectId, sourceApps, event) : await this.close(projectId, event));
      } catch (err) {
        results.push({ project_id: projectId, environment: previewSlug(event.number), error: (err as Error).message });
      }
    }
    return results;
  }

  private async open(projectId: string, sourceApps: string[], event: PullRequestEvent) {
    const settings = await this.repo.settings(projectId);
    if (!settings) return { project_id: projectId, skipped: 'previews are off' };
    const slug = previewSlug(event.number);
    const existing = await this.repo.find(projectId, slug);
    if (existing && !existing.preview_of) throw conflict(`Environment '${slug}' exists and is not a preview`);
    const services = await this.db.selectFrom('applications').select('id').where('project_id', '=', projectId).orderBy('slug').execute();
    let environmentId: string;
    let created = false;
    if (!existing) {
      environmentId = await this.repo.createFromTemplate({
        projectId,
        slug,
        name: `PR #${event.number}`,
        templateId: settings.template_environment_id,
        // A fork's preview never holds the template's secrets (nor is given anything unmarked: see resolveServiceConfig).
        copySecrets: settings.copy_secrets && !event.fromFork,
      });
      created = true;
    } else {
      environmentId = existing.id;
      created = existing.deleted_at !== null;
      if (existing.deleted_at) await this.repo.revive(environmentId);
      else if (existing.stopped_at) await this.repo.resume(environmentId);
    }
    await this.repo.savePreview({
      environment_id: environmentId,
      project_id: projectId,
      pr_number: event.number,
      repository: event.repository.toLowerCase(),
      head_sha: event.headSha,
      installation_id: event.installationId,
      source_application_ids: sourceApps,
      trust: event.fromFork ? 'fork' : 'same_repository',
      head_repository: event.headRepository?.toLowerCase() ?? null,
    });
    if (created) {
      await this.repo.recordEvent(
        services.map((s) => s.id),
        'preview.created',
        environmentId,
        { environment: slug, pr_number: event.number, repository: event.repository, head_sha: event.headSha },
      );
    }
    const stopped = await this.enforceCap(projectId, environmentId, settings.max_concurrent);
    // Services built from the pull request's repository build its head; the others their own branch.
    const started = [];
    for (const { id } of services) {
      try {
        const chain = await this.startChain(id, sourceApps.includes(id) ? event.headSha : null, environmentId);
        started.push({ application_id: id, image_id: chain.image_id });
      } catch (err) {
        started.push({ application_id: id, image_id: null, error: (err as Error).message });
      }
    }
    return { project_id: projectId, environment: slug, trust: event.fromFork ? 'fork' : 'same_repository', created, stopped, started };
  }

  /** Past the cap, the least recently active running previews stop (they come back on their next push). */
  private async enforceCap(projectId: string, currentId: string, max: number) {
    const others = await this.repo.running(projectId, currentId);
    const excess = others.slice(0, Math.max(0, others.length + 1 - max));
    for (const p of excess) await stopEnvironment(this.db, this.jobs, p.environment_id);
    return excess.map((p) => p.slug);
  }

  private async close(projectId: string, event: PullRequestEvent) {
    const slug = previewSlug(event.number);
    const existing = await this.repo.find(projectId, slug);
    if (!existing?.preview_of || existing.deleted_at) return { project_id: projectId, environment: slug, skipped: 'no open preview' };
    await deleteEnvironment(this.db, this.jobs, existing.id);
    const services = await this.db.selectFrom('applications').select('id').where('project_id', '=', projectId).execute();
    await this.repo.recordEvent(
      services.map((s) => s.id),
      'preview.deleted',
      existing.id,
      { environment: slug, pr_number: event.number, repository: event.repository },
    );
    return { project_id: projectId, environment: slug, deleted: true };
  }
}
