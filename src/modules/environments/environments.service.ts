import type { Static } from 'typebox';
import { v7 as uuidv7 } from 'uuid';
import type { Db } from '../../platform/db/database.js';
import type { Jobs } from '../../platform/jobs/index.js';
import type { EnvironmentsTable, EnvironmentType } from '../../platform/db/schema.js';
import { conflict, invalid, isUniqueViolation } from '../../platform/errors.js';
import { iso } from '../../platform/http/schemas.js';
import { slugFor } from '../../platform/slug.js';
import type { ConfigurationsService } from '../configurations/index.js';
import { SECRET_MASK } from '../configurations/index.js';
import { environmentTrust } from '../../platform/environments/index.js';
import { RECONCILE_JOB } from '../../platform/jobs/index.js';
import { OrganizationScope } from '../organizations/index.js';
import { EnvironmentsRepository } from './environments.repository.js';
import { requireBranchChangeAccess, requireProtectedEnvironmentAdmin } from '../../platform/access/environment-protection.js';
import { ENV_TYPES, type UpdateEnvironmentBody } from './environments.schemas.js';
import { serviceScopeChain } from '../configurations/index.js';
import { deleteEnvironment } from './retirement.js';

type EnvRow = NonNullable<Awaited<ReturnType<EnvironmentsRepository['findById']>>>;

/**
 * A project's environments. Every workspace member reads and changes them, except that
 * marking an environment protected (or unprotecting it) is for workspace admins, since
 * protection is what keeps non-admins from deploying there.
 */
export class EnvironmentsService {
  private readonly envs: EnvironmentsRepository;
  readonly scope: OrganizationScope;

  /** `jobs`, when the pipeline runs: a change of process settings reaches running services at once. */
  constructor(
    private readonly db: Db,
    envs: EnvironmentsRepository,
    scope: OrganizationScope,
    private readonly configs: Pick<ConfigurationsService, 'variablesInScopes'>,
    private readonly jobs?: Jobs,
  ) {
    this.envs = envs;
    this.scope = scope;
  }

  /** The record shown by the API, with each service's effective process settings here. */
  private async describe(env: EnvRow) {
    const [services, overrides] = await Promise.all([this.envs.services(env.project_id), this.envs.overrides(env.id)]);
    const byApp = new Map(overrides.map((o) => [o.application_id, o]));
    const process_counts: Record<string, Record<string, number>> = {};
    const process_pod_classes: Record<string, Record<string, string>> = {};
    for (const s of services) {
      const o = byApp.get(s.id);
      process_counts[s.slug] = { ...s.process_counts, ...(o?.process_counts ?? {}) };
      process_pod_classes[s.slug] = { ...s.process_pod_classes, ...(o?.process_pod_classes ?? {}) };
    }
    return {
      id: env.id,
      name: env.name,
      slug: env.slug,
      env_type: env.env_type,
      auto_deploy_branch: env.auto_deploy_branch,
      protected: env.protected,
      process_counts,
      process_pod_classes,
      service_count: services.length,
      created: iso(env.created_at),
      updated: iso(env.updated_at),
    };
  }

  async list(userId: string, ws: string, projectSlug: string) {
    const { project } = await this.scope.project(userId, ws, projectSlug);
    const rows = await this.envs.list(project.id);
    return Promise.all(rows.map((r) => this.describe(r)));
  }

  async get(userId: string, ws: string, projectSlug: string, envSlug: string) {
    const { environment } = await this.scope.environment(userId, ws, projectSlug, envSlug);
    return this.describe(environment);
  }

  async create(
    userId: string,
    ws: string,
    projectSlug: string,
    input: {
      name: string;
      slug?: string;
      env_type?: EnvironmentType;
      auto_deploy_branch?: string | null;
      protected?: boolean;
    },
  ) {
    const { organization, project } = await this.scope.project(userId, ws, projectSlug);
    if (input.protected) await this.scope.requireAdmin(userId, organization.id);
    const slug = slugFor(input.name, input.slug);
    // An environment named like a type (staging, preview, ...) is of that type unless told otherwise.
    const env_type = input.env_type ?? ((ENV_TYPES as readonly string[]).includes(slug) ? (slug as EnvironmentType) : 'development');
    try {
      const row = await this.envs.insert({
        id: uuidv7(),
        project_id: project.id,
        name: input.name,
        slug,
        env_type,
        auto_deploy_branch: input.auto_deploy_branch ?? null,
        protected: input.protected ?? false,
      });
      return this.describe(row);
    } catch (err) {
      if (isUniqueViolation(err)) {
        const held = await this.envs.findBySlug(project.id, slug);
        if (held?.deleted_at)
          throw conflict(`The slug '${slug}' belongs to a deleted environment of ${project.slug}, kept until its retention period ends`);
        throw conflict(`An environment with slug '${slug}' already exists in ${project.slug}`);
      }
      throw err;
    }
  }

  async update(userId: string, ws: string, projectSlug: string, envSlug: string, input: Static<typeof UpdateEnvironmentBody>) {
    const { organization, project, environment } = await this.scope.environment(userId, ws, projectSlug, envSlug);
    if (input.protected !== undefined && input.protected !== environment.protected) await this.scope.requireAdmin(userId, organization.id);
    // Application-level pipeline endpoints act on `production`: it stays of type production.
    if (environment.slug === 'production' && input.env_type !== undefined && input.env_type !== 'production') {
      throw invalid('env_type', 'the production environment is always of type production');
    }
    // Renaming is cosmetic; its type, scale and pod classes change what runs there.
    if (input.env_type !== undefined || input.process_counts !== undefined || input.process_pod_classes !== undefined) {
      await requireProtectedEnvironmentAdmin(this.db, userId, { environmentId: environment.id }, 'its type, scale or pod classes');
    }
    if (input.auto_deploy_branch !== undefined && input.auto_deploy_branch !== environment.auto_deploy_branch) {
      await requireBranchChangeAccess(this.db, userId, { environmentId: environment.id });
    }
    const services = new Map((await this.envs.services(project.id)).map((s) => [s.slug, s.id]));
    const serviceId = (field: string, slug: string) => {
      const id = services.get(slug);
      if (!id) throw invalid(`${field}.${slug}`, `no service '${slug}' in project ${project.slug}`);
      return id;
    };
    const perService = new Map<string, { counts: Record<string, number | null>; classes: Record<string, string | null> }>();
    const entry = (id: string) => perService.get(id) ?? perService.set(id, { counts: {}, classes: {} }).get(id)!;
    for (const [slug, counts] of Object.entries(input.process_counts ?? {})) entry(serviceId('process_counts', slug)).counts = counts;
    for (const [slug, classes] of Object.entries(input.process_pod_classes ?? {}))
      entry(serviceId('process_pod_classes', slug)).classes = classes;

    const changes: Partial<Pick<EnvironmentsTable, 'name' | 'env_type' | 'auto_deploy_branch'>> & { protected?: boolean } = {};
    if (input.name !== undefined) changes.name = input.name;
    if (input.env_type !== undefined) changes.env_type = input.env_type;
    if (input.auto_deploy_branch !== undefined) changes.auto_deploy_branch = input.auto_deploy_branch;
    if (input.protected !== undefined) changes.protected = input.protected;
    await this.envs.update(environment.id, changes);
    for (const [appId, o] of perService) await this.envs.mergeOverrides(environment.id, appId, o.counts, o.classes);
    await this.reconcile(environment.id, [...perService.keys()]);
    return this.describe((await this.envs.findById(environment.id))!);
  }

  /**
   * `DELETE`: any environment but `production` (a protected one: organization admins only),
   * and not the template of the project's previews. Its instances stop; its records stay
   * readable until the retention sweep.
   */
  async remove(userId: string, ws: string, projectSlug: string, envSlug: string) {
    const { project, environment } = await this.scope.environment(userId, ws, projectSlug, envSlug);
    await requireProtectedEnvironmentAdmin(this.db, userId, { environmentId: environment.id }, 'whether it exists');
    if (environment.slug === 'production' || environment.env_type === 'production') {
      throw conflict(`The production environment of ${project.slug} cannot be deleted`);
    }
    const template = await this.db
      .selectFrom('preview_settings')
      .select('project_id')
      .where('template_environment_id', '=', environment.id)
      .executeTakeFirst();
    if (template)
      throw conflict(`Environment '${environment.slug}' is the template of the project's previews: change the preview settings first`);
    await deleteEnvironment(this.db, this.jobs, environment.id);
  }

  /** Deployed services follow new counts without a new release, through the queue (never racing a deploy). */
  private async reconcile(environmentId: string, applicationIds: string[]) {
    if (!this.jobs || applicationIds.length === 0) return;
    const deployed = await this.envs.deployedServices(environmentId, applicationIds);
    for (const applicationId of deployed) await this.jobs.enqueue(RECONCILE_JOB, { applicationId, environmentId });
  }

  /**
   * The configuration a service would get in this environment, with the layer each value
   * came from and the higher layers it shadows. Secret values are never read here.
   */
  async resolvedConfig(userId: string, ws: string, projectSlug: string, envSlug: string, serviceSlug: string) {
    const { project, environment } = await this.scope.environment(userId, ws, projectSlug, envSlug);
    const service = await this.scope.application(project.id, serviceSlug);
    const chain = await serviceScopeChain(this.db, service.id, environment.id);
    // A fork's preview gets only the variables marked for previews (the rule resolveServiceConfig applies).
    const forkPreview = (await environmentTrust(this.db, environment.id)).configuration === 'marked_for_previews_only';
    const rows = (await this.configs.variablesInScopes(chain)).filter((row) => !forkPreview || row.previews);
    const rank = new Map(chain.map((l, i) => [`${l.scope}:${l.scopeId}`, i]));
    rows.sort((a, b) => rank.get(`${a.scope}:${a.scope_id}`)! - rank.get(`${b.scope}:${b.scope_id}`)!);
    const labelOf = (scope: string, scopeId: string) => chain[rank.get(`${scope}:${scopeId}`)!]!.label;
    const byName = new Map<string, { row: (typeof rows)[number]; overrides: Array<(typeof chain)[number]['label']> }>();
    for (const row of rows) {
      const key = row.name.toLowerCase();
      const previous = byName.get(key);
      byName.set(key, { row, overrides: previous ? [...previous.overrides, labelOf(previous.row.scope, previous.row.scope_id)] : [] });
    }
    const variables = [...byName.values()]
      .sort((a, b) => a.row.name.localeCompare(b.row.name))
      .map(({ row, overrides }) => ({
        name: row.name,
        value: row.secret ? SECRET_MASK : (row.value ?? ''),
        secret: row.secret,
        buildtime: row.buildtime,
        previews: row.previews,
        scope: labelOf(row.scope, row.scope_id),
        config_id: row.id,
        overrides,
      }));
    return {
      environment: environment.slug,
      service: service.slug,
      scopes: chain.map((l) => ({ scope: l.label, id: l.scopeId, slug: l.slug })),
      variables,
    };
  }
}
