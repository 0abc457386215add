import { registerDashboard } from './dashboard/serve.js';
import { trustedProxies } from './config.js';
import { DeniedRequests } from './platform/audit/denied-requests.js';
import Fastify, { type FastifyBaseLogger, type FastifyServerOptions } from 'fastify';
import rateLimit from '@fastify/rate-limit';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { AppContext } from './platform/context.js';
import { AppError } from './platform/errors.js';
import { OneLinePerRequest } from './platform/http/request-log.js';
import { REDACT } from './platform/logs/process-logger.js';
import { frameworkErrorHandler, installErrorHandling, setAccessGate } from './platform/http/error-handler.js';
import { defaultOptionalBodies, installJsonBodyParser, LENIENT_BODY, refuseUnexpectedBodies } from './platform/http/json-body.js';
import { rewriteApiAlias, ROUTER_OPTIONS } from './platform/http/api-aliases.js';
import { ErrorResponse } from './platform/http/schemas.js';
import type { App } from './platform/http/types.js';
import { namedSchemaOptions, shareNamedSchemas } from './platform/http/named-schemas.js';
import { validatorCompiler } from './platform/http/validation.js';
import { lazySerializers } from './platform/http/lazy-compilers.js';
import { authenticationHook, keyScopeHook } from './modules/auth/index.js';
import { countRequests } from './modules/metrics/index.js';
import { installAuditHooks } from './modules/audit/index.js';
import { endStreams } from './platform/http/sse.js';
import { composePlatform, type Composition } from './services.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface RouteEntry {
  method: string;
  url: string;
  public: boolean;
  /** A Server-Sent Events route (answers with a stream that stays open). */
  stream: boolean;
  /** Ignores unknown body fields instead of refusing them (Ancla's routes: src/adapters/ancla/lenient-bodies.ts). */
  readonly lenient: boolean;
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
  /** The process's own logger (main.ts builds it before the platform opens); else one from `logger`. */
  loggerInstance?: FastifyBaseLogger;
  /** The built platform (src/services.ts); else the app builds one (tests and tools that only serve requests). */
  composition?: Composition;
}

/** A number of hops as proxy-addr's trust function (hop 0 is the socket's peer): what Fastify does with a number, typed. */
function fastifyTrustProxy(trust: boolean | number | string[]) {
  return typeof trust === 'number' ? (_address: string, hop: number) => hop < trust : trust;
}

/**
 * Builds the HTTP app over a built platform, without listening or starting anything:
 * `start()` (src/lifecycle.ts) readies and listens, tests inject.
 */
export async function buildApp(ctx: AppContext, options: BuildOptions = {}): Promise<App> {
  const app = Fastify({
    ...(options.loggerInstance
      ? { loggerInstance: options.loggerInstance }
      : { logger: options.logger ?? { level: ctx.config.LOG_LEVEL, redact: REDACT } }),
    bodyLimit: ctx.config.BODY_LIMIT_BYTES,
    trustProxy: fastifyTrustProxy(trustedProxies(ctx.config.TRUST_PROXY)),
    ajv: { customOptions: { removeAdditional: false } },
    schemaController: { compilersFactory: lazySerializers },
    frameworkErrors: frameworkErrorHandler,
    logController: new OneLinePerRequest(),
    // `/api/v1/...` and trailing slashes answered as the canonical `/v1/...` (api-aliases.ts).
    routerOptions: { ...ROUTER_OPTIONS },
    rewriteUrl: rewriteApiAlias,
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.setValidatorCompiler(validatorCompiler);
  installErrorHandling(app);
  installJsonBodyParser(app);
  refuseUnexpectedBodies(app);
  defaultOptionalBodies(app);

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
        // Read when asked: a scope's own onRoute hooks (which mark lenient routes) run after this one.
        get lenient() {
          return Boolean((route.config as Record<string, unknown> | undefined)?.[LENIENT_BODY]);
        },
      });
    }
  });

  if (trustedProxies(ctx.config.TRUST_PROXY) === true)
    app.log.warn(
      "TRUST_PROXY=true believes X-Forwarded-For from any sender: clients choose their own address for login limits and the audit. Set the number of proxy hops (TRUST_PROXY=1) or the proxies' addresses instead",
    );
  // No cookie parser here: the routes that set or read a session register @fastify/cookie in their own scope
  // (auth, sso), and the authentication hook reads the session cookie only when no API key came (issue 35).
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

  const composition = options.composition ?? composePlatform(ctx, app.log);
  const { services } = composition;
  countRequests(app, services.metrics);
  // A stranger gets the 403/404 of the application the path names before any body error.
  setAccessGate(app, async (request) => {
    const id = (request.params as { application_id?: unknown } | undefined)?.application_id;
    if (request.principal && typeof id === 'string' && UUID.test(id)) await services.apps.authorize(request.principal.user.id, id);
  });
  for (const routes of composition.rootRoutes) await app.register(routes);
  app.decorate('notifications', services.notifications);
  // Open event streams would hold the server open: they end first, then the LISTEN connection.
  app.addHook('preClose', async () => {
    endStreams(app.server);
  });
  const deniedRequests = new DeniedRequests(ctx.db, (detail, message) => app.log.warn(detail, message));
  app.addHook('onClose', async () => {
    await deniedRequests.close();
    await services.notifications.close();
  });

  await app.register(
    async (v1) => {
      v1.addHook('onRequest', authenticationHook(services.auth));
      v1.addHook('preValidation', keyScopeHook(ctx.db));
      installAuditHooks(v1, services.audit, deniedRequests);
      for (const routes of composition.routes) await v1.register(routes);
      v1.get('/openapi.json', { config: { public: true }, schema: { hide: true } }, async () => app.swagger());
    },
    { prefix: '/v1' },
  );

  await registerDashboard(app);

  return app;
}
