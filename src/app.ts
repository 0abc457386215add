import { join } from 'node:path';
import Fastify, { type FastifyServerOptions } from 'fastify';
import cookie from '@fastify/cookie';
import rateLimit from '@fastify/rate-limit';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { AppContext } from './platform/context.js';
import { AppError } from './platform/errors.js';
import { installErrorHandling } from './platform/http/error-handler.js';
import { installJsonBodyParser } from './platform/http/json-body.js';
import { ErrorResponse } from './platform/http/schemas.js';
import type { App } from './platform/http/types.js';
import { validatorCompiler } from './platform/http/validation.js';
import { authenticationHook } from './modules/auth/auth.hook.js';
import { authRoutes } from './modules/auth/auth.routes.js';
import { AuthService } from './modules/auth/auth.service.js';
import { usersRoutes } from './modules/users/users.routes.js';
import { organizationsRoutes } from './modules/organizations/organizations.routes.js';
import { projectsRoutes } from './modules/projects/projects.routes.js';
import { applicationsRoutes } from './modules/applications/applications.routes.js';
import { ApplicationsService } from './modules/applications/applications.service.js';
import { configurationsRoutes } from './modules/configurations/configurations.routes.js';
import { ConfigurationsService } from './modules/configurations/configurations.service.js';
import { healthRoutes } from './modules/integrations/health.routes.js';
import { SourceBuilder } from './platform/builder/index.js';
import { createBuildahBuilder } from './platform/builder/buildah.js';
import { imagesRoutes } from './modules/images/images.routes.js';
import { ImagesService } from './modules/images/images.service.js';
import { releasesRoutes } from './modules/releases/releases.routes.js';
import { ReleasesService } from './modules/releases/releases.service.js';
import { githubRoutes } from './modules/github/github.routes.js';
import { GithubHooksService } from './modules/github/github-hooks.service.js';
import { latestRecordsSource } from './modules/pipeline/latest-records.js';
import { pipelineRoutes } from './modules/pipeline/pipeline.routes.js';
import { PipelineService } from './modules/pipeline/pipeline.service.js';
import { workspacesRoutes } from './modules/workspaces/workspaces.routes.js';
import { teamsRoutes } from './modules/teams/teams.routes.js';
import { environmentsRoutes } from './modules/environments/environments.routes.js';
import { envDeploysRoutes } from './modules/environments/env-deploys.routes.js';
import { EnvDeploysService } from './modules/environments/env-deploys.service.js';
import { EnvironmentPipeline } from './modules/environments/service-pipeline.js';
import { registryRoutes } from './modules/registry/registry.routes.js';
import { SigningKeys } from './platform/crypto/signing-key.js';
import { deploymentsRoutes } from './modules/deployments/deployments.routes.js';
import { DeploymentsService } from './modules/deployments/deployments.service.js';
import { registerDeploymentJobs } from './modules/deployments/deployments.jobs.js';
import { DeployChain } from './modules/deployments/deploy-chain.js';
import { observabilityRoutes } from './modules/observability/observability.routes.js';
import { ObservabilityService } from './modules/observability/observability.service.js';

export interface RouteEntry {
  method: string;
  url: string;
  public: boolean;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Every API route, for the OpenAPI check and the access-matrix test. */
    routeTable: RouteEntry[];
  }
}

export interface BuildOptions {
  logger?: FastifyServerOptions['logger'];
}

/** Headers that carry credentials never reach the log. */
const REDACT = ['req.headers["x-api-key"]', 'req.headers.cookie', 'req.headers.authorization', 'res.headers["set-cookie"]'];

/** Builds the HTTP app without listening: main.ts listens, tests inject. */
export async function buildApp(ctx: AppContext, options: BuildOptions = {}): Promise<App> {
  const app = Fastify({
    logger: options.logger ?? { level: ctx.config.LOG_LEVEL, redact: REDACT },
    bodyLimit: ctx.config.BODY_LIMIT_BYTES,
    trustProxy: ctx.config.TRUST_PROXY,
    ajv: { customOptions: { removeAdditional: false } },
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.setValidatorCompiler(validatorCompiler);
  installErrorHandling(app);
  installJsonBodyParser(app);

  app.decorate('routeTable', [] as RouteEntry[]);
  app.addHook('onRoute', (route) => {
    if (!route.url.startsWith('/v1/')) return;
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      if (method === 'HEAD') continue;
      app.routeTable.push({ method, url: route.url, public: Boolean((route.config as { public?: boolean } | undefined)?.public) });
    }
  });

  await app.register(cookie);
  await app.register(rateLimit, {
    global: false,
    errorResponseBuilder: (_req, context) => new AppError('RATE_LIMITED', `Too many requests; retry in ${context.after}`),
  });
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Slipway API',
        version: '1',
        description: 'Self-hosted deployment platform. Choices beyond the specification are described in docs/api-decisions.md.',
      },
      servers: [{ url: '/' }],
      components: {
        securitySchemes: {
          apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
          session: { type: 'apiKey', in: 'cookie', name: 'slipway_session' },
        },
      },
      security: [{ apiKey: [] }, { session: [] }],
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.addSchema(ErrorResponse);

  const auth = new AuthService(ctx);
  const config = new ConfigurationsService(ctx.db, ctx.secrets);
  // A scale reaches running instances through the deployments module (a queued `reconcile`).
  let deployments: DeploymentsService | undefined;
  const apps = new ApplicationsService(ctx.db, latestRecordsSource(ctx.db), async (id) => { await deployments?.scaled(id); });
  deployments = new DeploymentsService(ctx, apps);
  // Pipeline build stage: builders in order of preference (the source builder accepts anything).
  // A context with a Dockerfile goes to buildah (which says what to install when it is missing).
  const images = new ImagesService(ctx, apps, config, [createBuildahBuilder(ctx.config), new SourceBuilder(join(ctx.config.dataDir, 'cache'))]);
  if (ctx.jobs) images.registerJobs(ctx.jobs);
  const releases = new ReleasesService(ctx, apps, config);
  if (ctx.jobs) releases.registerJobs(ctx.jobs);
  registerDeploymentJobs(ctx, app.log.child({ component: 'runtime' }));
  // `POST /applications/{id}/deploy` (and GitHub pushes): build → release → deploy as one job.
  const deployChain = new DeployChain(ctx, apps, images, releases);
  deployChain.registerJobs();

  await app.register(async (v1) => {
    v1.addHook('onRequest', authenticationHook(auth));
    await v1.register(authRoutes(ctx, auth));
    await v1.register(usersRoutes(ctx));
    await v1.register(organizationsRoutes(ctx));
    await v1.register(projectsRoutes(ctx));
    await v1.register(applicationsRoutes(apps));
    await v1.register(configurationsRoutes(ctx, apps, config));
    await v1.register(healthRoutes(ctx));
    await v1.register(imagesRoutes(images));
    await v1.register(releasesRoutes(releases));
    await v1.register(pipelineRoutes(new PipelineService(ctx.db, apps)));
    await v1.register(githubRoutes(new GithubHooksService(ctx, (id, ref, environmentId) => deployChain.start(id, ref, environmentId))));
    await v1.register(workspacesRoutes(ctx, config));
    await v1.register(teamsRoutes(ctx, config));
    await v1.register(environmentsRoutes(ctx, config));
    await v1.register(envDeploysRoutes(new EnvDeploysService(ctx.db, new EnvironmentPipeline(ctx, deployChain, deployments, config), app.log.child({ component: 'env-deploys' }))));
    await v1.register(registryRoutes(ctx, SigningKeys.forConfig(ctx.config), auth));
    await v1.register(deploymentsRoutes(deployments, deployChain));
    await v1.register(observabilityRoutes(new ObservabilityService(ctx.db, apps)));
    v1.get('/openapi.json', { config: { public: true }, schema: { hide: true } }, async () => app.swagger());
  }, { prefix: '/v1' });

  return app;
}
