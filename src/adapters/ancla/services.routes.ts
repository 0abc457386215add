import { Type } from 'typebox';
import type { FastifyRequest } from 'fastify';
import { AppError } from '../../platform/errors.js';
import { commonErrorResponses, ErrorResponse } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import type { ApplicationsService } from '../../modules/applications/index.js';
import type { ConfigurationsService, ScopedConfig } from '../../modules/configurations/index.js';
import { ConfigVariable } from '../../modules/configurations/index.js';
import { registerScopedConfigRoutes } from './scoped-config.routes.js';
import { ResolvedServiceConfig, type EnvironmentsService } from '../../modules/environments/index.js';
import type { OrganizationScope } from '../../modules/organizations/index.js';
import type { ApplicationRemoval, DeploymentsService, EnvDeploysService, ImagesService, PipelineService } from '../../pipeline/index.js';
import { toBuild, toBuildDetail, toBuildLog, toDeploy, toDeployLog, toPipelineStatus, toService } from './services.mapping.js';
import {
  BuildDetail,
  BuildList,
  BuildLog,
  BuildResult,
  BuildVersionParams,
  CreateServiceBody,
  Deploy,
  DeployList,
  DeployLog,
  DeployResult,
  DeployServiceBody,
  EnvParams,
  EnvServiceParams,
  ListQuery,
  PipelineStatus,
  ScaleServiceBody,
  Service,
  ServiceConfigItemParams,
  TriggerBuildBody,
  UpdateServiceBody,
} from './services.schemas.js';

const SERVICES = '/workspaces/:workspace/projects/:project/envs/:env/services';
const SERVICE = `${SERVICES}/:service`;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Ancla's clients written in Go (its CLI and Go SDK share Go's default User-Agent) decode a
 * service's deploy list as the bare array Ancla's OpenAPI declares; its Python and TypeScript
 * SDKs decode the page `{items}`. One path, two readers: docs/api-decisions.md.
 */
const wantsBareArray = (request: FastifyRequest) => /^Go-http-client\//.test(request.headers['user-agent'] ?? '');

type EnvServicePath = { workspace: string; project: string; env: string; service: string };

/**
 * `/workspaces/{ws}/projects/{p}/envs/{env}/services/...`: a project's applications seen in one
 * of its environments, their builds (images), deploys (deployments) and configuration.
 */
export function servicesRoutes(deps: {
  apps: ApplicationsService;
  environments: EnvironmentsService;
  scope: OrganizationScope;
  images: ImagesService;
  deployments: DeploymentsService;
  envDeploys: EnvDeploysService;
  status: PipelineService;
  removal: ApplicationRemoval;
  config: ConfigurationsService;
  scopedConfig: ScopedConfig;
}) {
  const { apps, environments, scope, images, deployments, envDeploys, status, config } = deps;
  const tags = ['Services'];
  const errors = { ...commonErrorResponses, 503: ErrorResponse };

  /** The application of slug `service` in the project, once the environment is known and the caller a member. */
  async function serviceIn(userId: string, p: EnvServicePath) {
    const { project, environment } = await scope.environment(userId, p.workspace, p.project, p.env);
    const application = await scope.application(project.id, p.service);
    return { project, environment, application };
  }

  /** The service as Ancla shows it; `env`, when the caller already read the environment (a list). */
  async function serviceView(userId: string, p: EnvServicePath, env?: Awaited<ReturnType<EnvironmentsService['get']>>) {
    const [app, here] = await Promise.all([
      apps.detailBySlugs(userId, p.workspace, p.project, p.service, p.env),
      env ?? environments.get(userId, p.workspace, p.project, p.env),
    ]);
    return toService(app, here.slug, here.process_counts[app.slug] ?? {});
  }

  /** The service's variables (the application scope; every environment shares them). */
  const serviceScope = async (userId: string, p: EnvServicePath) => ({
    scope: 'application' as const,
    scopeId: (await serviceIn(userId, p)).application.id,
  });

  return async (app: App) => {
    app.get(
      SERVICES,
      {
        schema: {
          tags,
          summary: "The environment's services (the project's applications, with their process counts here)",
          params: EnvParams,
          response: { 200: Type.Array(Service), ...commonErrorResponses },
        },
      },
      async (request) => {
        const p = request.params;
        const userId = currentUser(request).id;
        const env = await environments.get(userId, p.workspace, p.project, p.env);
        const slugs = Object.keys(env.process_counts).sort();
        return Promise.all(slugs.map((service) => serviceView(userId, { ...p, service }, env)));
      },
    );

    app.post(
      SERVICES,
      {
        schema: {
          tags,
          summary: "Create a service: an application of the environment's project (every environment of the project has it)",
          params: EnvParams,
          body: CreateServiceBody,
          response: { 201: Service, ...commonErrorResponses },
        },
      },
      async (request, reply) => {
        const p = request.params;
        const userId = currentUser(request).id;
        const { project } = await scope.environment(userId, p.workspace, p.project, p.env);
        const created = await apps.create(userId, { ...request.body, project_id: project.id });
        return reply.code(201).send(await serviceView(userId, { ...p, service: created.slug }));
      },
    );

    app.get(
      SERVICE,
      {
        schema: {
          tags,
          summary: 'A service in this environment',
          params: EnvServiceParams,
          response: { 200: Service, ...commonErrorResponses },
        },
      },
      async (request) => serviceView(currentUser(request).id, request.params),
    );

    app.patch(
      SERVICE,
      {
        schema: {
          tags,
          summary: 'Change where a service is built from (`github_repository`, `auto_deploy_branch`; `""` or null: none)',
          params: EnvServiceParams,
          body: UpdateServiceBody,
          response: { 200: Service, ...commonErrorResponses },
        },
      },
      async (request) => {
        const userId = currentUser(request).id;
        const { application } = await serviceIn(userId, request.params);
        const none = (v: string | null | undefined) => (v === '' ? null : v);
        const { github_repository, auto_deploy_branch } = request.body;
        await apps.updateSettings(userId, application.id, {
          ...(github_repository !== undefined ? { github_repository: none(github_repository) } : {}),
          ...(auto_deploy_branch !== undefined ? { auto_deploy_branch: none(auto_deploy_branch) } : {}),
        });
        return serviceView(userId, request.params);
      },
    );

    app.post(
      `${SERVICE}/scale`,
      {
        schema: {
          tags,
          summary: "Set the service's process counts in this environment (others keep theirs)",
          params: EnvServiceParams,
          body: ScaleServiceBody,
          response: { 200: Service, ...commonErrorResponses },
        },
      },
      async (request) => {
        const p = request.params;
        const userId = currentUser(request).id;
        await serviceIn(userId, p);
        await environments.update(userId, p.workspace, p.project, p.env, { process_counts: { [p.service]: request.body.process_counts } });
        return serviceView(userId, p);
      },
    );

    app.post(
      `${SERVICE}/deploy`,
      {
        schema: {
          tags,
          summary:
            'Build, release and deploy the service into this environment (an environment deploy of this service): answers 202 at once',
          params: EnvServiceParams,
          body: DeployServiceBody,
          response: { 202: DeployResult, ...errors },
        },
      },
      async (request, reply) => {
        const p = request.params;
        const userId = currentUser(request).id;
        const started = await envDeploys.deploy(userId, p.workspace, p.project, p.env, p.service, request.body?.ref);
        const mine = started.services[0]!;
        // As an environment deploy: the record is kept and answered, a pipeline that could not start included.
        const build = mine.image_id ? await images.detail(userId, mine.image_id) : null;
        return reply.code(202).send({
          build_id: build?.id ?? '',
          version: build?.version ?? 0,
          deploy_id: started.id,
          job_id: mine.job_id ?? '',
          error: mine.status === 'error',
          error_detail: mine.error_detail ?? '',
        });
      },
    );

    app.get(
      `${SERVICE}/pipeline-status`,
      {
        schema: {
          tags,
          summary: "The service's newest build, release and deploy in this environment, in Ancla's words",
          params: EnvServiceParams,
          response: { 200: PipelineStatus, ...commonErrorResponses },
        },
      },
      async (request) => {
        const userId = currentUser(request).id;
        const { application } = await serviceIn(userId, request.params);
        return toPipelineStatus(await status.status(userId, application.id, request.params.env));
      },
    );

    // --- builds (images) ---

    app.get(
      `${SERVICE}/builds`,
      {
        schema: {
          tags,
          summary: "The service's builds, newest first (a build serves every environment)",
          params: EnvServiceParams,
          querystring: ListQuery,
          response: { 200: BuildList, ...commonErrorResponses },
        },
      },
      async (request) => {
        const userId = currentUser(request).id;
        const { application } = await serviceIn(userId, request.params);
        const page = await images.list(userId, application.id, request.query);
        return { items: page.items.map(toBuild), pagination: page.pagination };
      },
    );

    const triggerBuild = async (request: FastifyRequest, params: EnvServicePath, body: { ref?: string } | null) => {
      const userId = currentUser(request).id;
      const { application } = await serviceIn(userId, params);
      const started = await images.requestBuild(userId, application.id, body?.ref);
      return { build_id: started.image_id, version: started.version };
    };
    for (const path of [`${SERVICE}/builds/trigger`, `${SERVICE}/builds`]) {
      app.post(
        path,
        {
          schema: {
            tags,
            summary: 'Build the service from its repository (answers 202 at once; follow the build log)',
            params: EnvServiceParams,
            body: TriggerBuildBody,
            response: { 202: BuildResult, ...errors },
          },
        },
        async (request, reply) => reply.code(202).send(await triggerBuild(request, request.params, request.body)),
      );
    }

    const buildOfVersion = async (userId: string, p: EnvServicePath & { version: number }) => {
      const { application } = await serviceIn(userId, p);
      return images.idOfVersion(userId, application.id, p.version);
    };

    app.get(
      `${SERVICE}/builds/:version`,
      {
        schema: {
          tags,
          summary: 'A build by its version',
          params: BuildVersionParams,
          response: { 200: BuildDetail, ...commonErrorResponses },
        },
      },
      async (request) => {
        const userId = currentUser(request).id;
        return toBuildDetail(await images.detail(userId, await buildOfVersion(userId, request.params)));
      },
    );

    app.get(
      `${SERVICE}/builds/:version/log`,
      {
        schema: {
          tags,
          summary: "A build's log and status, by version",
          params: BuildVersionParams,
          response: { 200: BuildLog, ...commonErrorResponses },
        },
      },
      async (request) => {
        const userId = currentUser(request).id;
        const id = await buildOfVersion(userId, request.params);
        const [image, log] = await Promise.all([images.detail(userId, id), images.log(userId, id)]);
        return toBuildLog(image, log);
      },
    );

    // --- deploys (deployments) ---

    app.get(
      `${SERVICE}/deploys`,
      {
        schema: {
          tags,
          summary: "The service's deploys in this environment, newest first",
          params: EnvServiceParams,
          querystring: ListQuery,
          response: { 200: DeployList, ...commonErrorResponses },
        },
      },
      async (request) => {
        const userId = currentUser(request).id;
        const p = request.params;
        const { application } = await serviceIn(userId, p);
        const page = await deployments.list(userId, application.id, { ...request.query, environment: p.env });
        const items = page.items.map(toDeploy);
        return wantsBareArray(request) ? items : { items, pagination: page.pagination };
      },
    );

    /** The deployment `id`, once it is this service's in this environment. */
    const deploymentOf = async (userId: string, p: EnvServicePath, id: string) => {
      const { application, environment } = await serviceIn(userId, p);
      const d = await deployments.detail(userId, id);
      if (d.application_id !== application.id || d.environment_id !== environment.id) throw new AppError('NOT_FOUND', 'Deploy not found');
      return d;
    };
    const DeployParams = Type.Object({ ...EnvServiceParams.properties, deployment_id: Type.String({ format: 'uuid' }) });

    app.get(
      `${SERVICE}/deploys/:deployment_id`,
      { schema: { tags, summary: 'A deploy of the service', params: DeployParams, response: { 200: Deploy, ...commonErrorResponses } } },
      async (request) => toDeploy(await deploymentOf(currentUser(request).id, request.params, request.params.deployment_id)),
    );

    app.get(
      `${SERVICE}/deploys/:deployment_id/log`,
      {
        schema: { tags, summary: "A deploy's log", params: DeployParams, response: { 200: DeployLog, ...commonErrorResponses } },
      },
      async (request) => {
        const userId = currentUser(request).id;
        await deploymentOf(userId, request.params, request.params.deployment_id);
        return toDeployLog(await deployments.log(userId, request.params.deployment_id));
      },
    );

    // --- configuration ---

    app.get(
      `${SERVICE}/config`,
      {
        schema: {
          tags,
          summary:
            "The service's own variables (secrets masked). Under `/v1`, Slipway's documented view instead: the configuration resolved in this environment (also at `config/resolved`)",
          params: EnvServiceParams,
          response: { 200: Type.Union([Type.Array(ConfigVariable), ResolvedServiceConfig]), ...commonErrorResponses },
        },
      },
      async (request) => {
        const userId = currentUser(request).id;
        const p = request.params;
        // Ancla's clients call `/api/v1/...`: the path keeps both meanings (docs/api-decisions.md).
        if (!request.originalUrl.startsWith('/api/v1/'))
          return environments.resolvedConfig(userId, p.workspace, p.project, p.env, p.service);
        return config.list(await serviceScope(userId, p));
      },
    );

    app.get(
      `${SERVICE}/config/resolved`,
      {
        schema: {
          tags,
          summary: 'The resolved configuration of the service in this environment: each value with the layer it came from (secrets masked)',
          params: EnvServiceParams,
          response: { 200: ResolvedServiceConfig, ...commonErrorResponses },
        },
      },
      async (request) => {
        const p = request.params;
        return environments.resolvedConfig(currentUser(request).id, p.workspace, p.project, p.env, p.service);
      },
    );

    app.delete(
      SERVICE,
      {
        schema: {
          tags,
          summary: "Delete a service: the whole application, in every environment (Slipway's `DELETE /v1/applications/{id}`; 204)",
          description: 'Its add-ons stay in the workspace; only their attachments go.',
          params: EnvServiceParams,
          response: { 204: Type.Null(), ...errors },
        },
      },
      async (request, reply) => {
        const user = currentUser(request);
        const { application } = await serviceIn(user.id, request.params);
        await deps.removal.remove(user, application.id);
        return reply.code(204).send(null);
      },
    );

    app.delete(
      `${SERVICE}/config/:config_id`,
      {
        schema: {
          tags,
          summary: 'Delete a service variable, by id or by name (204)',
          params: ServiceConfigItemParams,
          response: { 204: Type.Null(), ...commonErrorResponses },
        },
      },
      async (request, reply) => {
        const userId = currentUser(request).id;
        const ref = await serviceScope(userId, request.params);
        await config.authorizeWrite(userId, ref);
        const wanted = request.params.config_id;
        let id = wanted;
        if (!UUID.test(wanted)) {
          const byName = (await config.list(ref)).find((v) => v.name.toLowerCase() === wanted.toLowerCase());
          if (!byName) throw new AppError('NOT_FOUND', 'Configuration variable not found');
          id = byName.id;
        }
        await config.delete(ref, id);
        return reply.code(204).send(null);
      },
    );

    registerScopedConfigRoutes(app, {
      prefix: SERVICE,
      params: EnvServiceParams,
      tags,
      label: 'service',
      config,
      scoped: deps.scopedConfig,
      scopeOf: (params, userId) => serviceScope(userId, params as EnvServicePath),
      omit: ['list', 'delete'],
    });
  };
}
