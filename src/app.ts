import { registerDashboard } from './dashboard/serve.js';
import { trustedProxies } from './config.js';
import { DeniedRequests } from './platform/audit/denied-requests.js';
import Fastify, { type FastifyServerOptions } from 'fastify';
import cookie from '@fastify/cookie';
import rateLimit from '@fastify/rate-limit';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { AppContext } from './platform/context.js';
import { AppError } from './platform/errors.js';
import { OneLinePerRequest } from './platform/http/request-log.js';
import { frameworkErrorHandler, installErrorHandling } from './platform/http/error-handler.js';
import { installJsonBodyParser, refuseUnexpectedBodies } from './platform/http/json-body.js';
import { ErrorResponse } from './platform/http/schemas.js';
import type { App } from './platform/http/types.js';
import { namedSchemaOptions, shareNamedSchemas } from './platform/http/named-schemas.js';
import { validatorCompiler } from './platform/http/validation.js';
import { authenticationHook } from './modules/auth/index.js';
import { authRoutes } from './modules/auth/index.js';
import { usersRoutes } from './modules/users/index.js';
import { organizationsRoutes } from './modules/organizations/index.js';
import { pipelineLimitsRoutes } from './modules/organizations/index.js';
import { projectsRoutes } from './modules/projects/index.js';
import { applicationsRoutes } from './modules/applications/index.js';
import { configurationsRoutes } from './modules/configurations/index.js';
import { healthRoutes } from './modules/integrations/index.js';
import { imagesRoutes } from './modules/images/index.js';
import { storageRoutes } from './modules/storage/index.js';
import { releasesRoutes } from './modules/releases/index.js';
import { githubInstallationsRoutes, githubRoutes } from './modules/github/index.js';
import { pipelineRoutes } from './modules/pipeline-status/index.js';
import { workspacesRoutes } from './modules/workspaces/index.js';
import { teamsRoutes } from './modules/teams/index.js';
import { environmentsRoutes } from './modules/environments/index.js';
import { envDeploysRoutes } from './modules/env-deploys/index.js';
import { registryRoutes } from './modules/registry/index.js';
import { deploymentsRoutes } from './modules/deployments/index.js';
import { observabilityRoutes } from './modules/observability/index.js';
import { guardsRoutes } from './modules/guards/index.js';
import { countRequests, metricsRoutes } from './modules/metrics/index.js';
import { domainsRoutes } from './modules/domains/index.js';
import { oneOffRunsRoutes } from './modules/deployments/index.js';
import { cronRoutes } from './modules/cron/index.js';
import { autoscalingRoutes } from './modules/autoscaling/index.js';
import { appLogsRoutes } from './modules/app-logs/index.js';
import { streamsRoutes } from './modules/streams/index.js';
import { auditRoutes, installAuditHooks } from './modules/audit/index.js';
import { webhooksRoutes } from './modules/webhooks/index.js';
import { previewsRoutes } from './modules/previews/index.js';
import { endStreams } from './platform/http/sse.js';
import { createServices } from './services.js';

export interface RouteEntry {
  method: string;
  url: string;
  public: boolean;
  /** A Server-Sent Events route (answers with a stream that stays open). */
  stream: boolean;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Every API route, for the OpenAPI check and the access-matrix test. */
    routeTable: RouteEntry[];
    /** This process's LISTEN fan-out of live streams (tests check closed streams leave nothing). */
    notifications: { readonly subscriberCount: number };
  }
}

export interface BuildOptions {
  logger?: FastifyServerOptions['logger'];
}

/** Headers that carry credentials never reach the log. */
const REDACT = ['req.headers["x-api-key"]', 'req.headers.cookie', 'req.headers.authorization', 'res.headers["set-cookie"]'];

/** A number of hops as proxy-addr's trust function (hop 0 is the socket's peer): what Fastify does with a number, typed. */
function fastifyTrustProxy(trust: boolean | number | string[]) {
  return typeof trust === 'number' ? (_address: string, hop: number) => hop < trust : trust;
}

/** Builds the HTTP app without listening: main.ts listens, tests inject. */
export async function buildApp(ctx: AppContext, options: BuildOptions = {}): Promise<App> {
  const app = Fastify({
    logger: options.logger ?? { level: ctx.config.LOG_LEVEL, redact: REDACT },
    bodyLimit: ctx.config.BODY_LIMIT_BYTES,
    trustProxy: fastifyTrustProxy(trustedProxies(ctx.config.TRUST_PROXY)),
    ajv: { customOptions: { removeAdditional: false } },
    frameworkErrors: frameworkErrorHandler,
    logController: new OneLinePerRequest(),
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.setValidatorCompiler(validatorCompiler);
  installErrorHandling(app);
  installJsonBodyParser(app);
  refuseUnexpectedBodies(app);

  app.decorate('routeTable', [] as RouteEntry[]);
  app.addHook('onRoute', (route) => {
    if (!route.url.startsWith('/v1/')) return;
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      if (method === 'HEAD') continue;
      const produces = (route.schema as { produces?: string[] } | undefined)?.produces ?? [];
      app.routeTable.push({
        method,
        url: route.url,
        public: Boolean((route.config as { public?: boolean } | undefined)?.public),
        stream: produces.includes('text/event-stream'),
      });
    }
  });

  if (trustedProxies(ctx.config.TRUST_PROXY) === true)
    app.log.warn(
      "TRUST_PROXY=true believes X-Forwarded-For from any sender: clients choose their own address for login limits and the audit. Set the number of proxy hops (TRUST_PROXY=1) or the proxies' addresses instead",
    );
  await app.register(cookie);
  await app.register(rateLimit, {
    global: false,
    errorResponseBuilder: (_req, context) => new AppError('RATE_LIMITED', `Too many requests; retry in ${context.after}`),
  });
  await app.register(swagger, {
    ...namedSchemaOptions,
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
          metricsToken: { type: 'http', scheme: 'bearer', description: 'METRICS_TOKEN, for GET /metrics only' },
        },
      },
      security: [{ apiKey: [] }, { session: [] }],
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.addSchema(ErrorResponse);
  await shareNamedSchemas(app);

  ctx.logger ??= app.log.child({ component: 'pipeline' });
  const services = createServices(ctx, app.log);
  countRequests(app, services.metrics);
  await app.register(metricsRoutes(services.metrics, ctx.config.METRICS_TOKEN));
  app.decorate('notifications', services.notifications);
  // Open event streams would hold the server open: they end first, then the LISTEN connection.
  app.addHook('preClose', async () => {
    endStreams(app.server);
  });
  const deniedRequests = new DeniedRequests(ctx.db, (detail, message) => app.log.warn(detail, message));
  app.addHook('onClose', async () => {
    await deniedRequests.close();
    await services.guardWatcher?.stop();
    await services.cronScheduler?.stop();
    await services.notifications.close();
  });

  await app.register(
    async (v1) => {
      v1.addHook('onRequest', authenticationHook(services.auth));
      installAuditHooks(v1, services.audit, deniedRequests);
      await v1.register(authRoutes(services.auth));
      await v1.register(usersRoutes(services.users));
      await v1.register(organizationsRoutes(services.organizations));
      await v1.register(
        pipelineLimitsRoutes(services.organizations, {
          buildTimeoutSeconds: ctx.config.BUILD_TIMEOUT_SECONDS,
          diskQuotaMb: ctx.config.ORG_DISK_QUOTA_MB,
          outbound: ctx.config.SANDBOX_OUTBOUND,
        }),
      );
      await v1.register(projectsRoutes(services.projects));
      await v1.register(applicationsRoutes(services.apps));
      await v1.register(configurationsRoutes(services.apps, services.config));
      await v1.register(healthRoutes(ctx));
      await v1.register(imagesRoutes(services.images));
      await v1.register(storageRoutes(services.storage));
      await v1.register(releasesRoutes(services.releases));
      await v1.register(pipelineRoutes(services.pipeline));
      await v1.register(githubRoutes(services.githubHooks));
      await v1.register(githubInstallationsRoutes(services.githubInstallations));
      await v1.register(workspacesRoutes(services.workspaces, services.scopedConfig, services.config));
      await v1.register(teamsRoutes(services.teams, services.scopedConfig, services.config));
      await v1.register(environmentsRoutes(services.environments, services.scopedConfig, services.config));
      await v1.register(envDeploysRoutes(services.envDeploys));
      await v1.register(previewsRoutes(services.previews));
      await v1.register(registryRoutes(services.signingKeys, services.registryTokens));
      await v1.register(deploymentsRoutes(services.deployments, services.deployChain));
      await v1.register(observabilityRoutes(services.observability));
      await v1.register(guardsRoutes(services.guards));
      await v1.register(domainsRoutes(services.domains));
      await v1.register(oneOffRunsRoutes(services.runs));
      await v1.register(cronRoutes(services.cron));
      await v1.register(autoscalingRoutes(services.autoscaling));
      await v1.register(appLogsRoutes(services.appLogs));
      await v1.register(
        streamsRoutes(services.streams, (userId, p) => services.envDeploys.detail(userId, p.workspace, p.project, p.env, p.deploy_id)),
      );
      await v1.register(auditRoutes(services.audit));
      await v1.register(webhooksRoutes(services.webhooks));
      v1.get('/openapi.json', { config: { public: true }, schema: { hide: true } }, async () => app.swagger());
    },
    { prefix: '/v1' },
  );

  await registerDashboard(app);

  return app;
}
