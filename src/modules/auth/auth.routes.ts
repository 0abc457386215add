import cookie from '@fastify/cookie';
import { Type } from 'typebox';
import { commonErrorResponses, IdParam, Ok } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import { addressBlock } from '../../platform/net/address-block.js';
import { identify, SESSION_COOKIE } from './auth.hook.js';
import { ApiKey, CliLoginApproved, CliLoginBody, CreateApiKeyBody, CreatedApiKey, LoginBody, Session } from './auth.schemas.js';
import { forbidden } from '../../platform/errors.js';
import type { AuthService } from './auth.service.js';

export function authRoutes(auth: AuthService) {
  return async (app: App) => {
    // Sign-in sets the session cookie and logout clears it: the cookie parser in this scope only.
    await app.register(cookie);
    app.get(
      '/auth/session',
      {
        config: { public: true },
        schema: { tags: ['Authentication'], summary: 'Who is calling', response: { 200: Session } },
      },
      async (request) => {
        const principal = await identify(auth, request);
        return principal ? { authenticated: true, user: principal.user } : { authenticated: false, user: null };
      },
    );

    app.post(
      '/auth/login',
      {
        config: {
          public: true,
          // A flood guard per (address, account), never per address alone: a storm on one account
          // from behind a NAT must not refuse the others behind it. Keyed after the body is parsed.
          rateLimit: {
            max: 30,
            timeWindow: '1 minute',
            hook: 'preHandler',
            keyGenerator: (request) =>
              `${addressBlock(request.ip)}|${String((request.body as { email?: unknown } | undefined)?.email).toLowerCase()}`,
          },
        },
        schema: {
          tags: ['Authentication'],
          summary: 'Log in; sets the session cookie',
          body: LoginBody,
          response: { 200: Session, ...commonErrorResponses },
        },
      },
      async (request, reply) => {
        const { token, expires, user } = await auth.login(
          request.body.email,
          request.body.password,
          request.ip,
          request.headers['user-agent'] ?? null,
        );
        reply.setCookie(SESSION_COOKIE, token, { path: '/', httpOnly: true, sameSite: 'lax', secure: 'auto', expires });
        return { authenticated: true, user };
      },
    );

    app.post(
      '/auth/logout',
      {
        schema: { tags: ['Authentication'], summary: 'End the session', response: { 200: Ok, ...commonErrorResponses } },
      },
      async (request, reply) => {
        const token = request.cookies[SESSION_COOKIE];
        if (token) await auth.logout(token);
        reply.clearCookie(SESSION_COOKIE, { path: '/' });
        return { ok: true };
      },
    );

    app.get(
      '/auth/api-keys',
      {
        schema: {
          tags: ['Authentication'],
          summary: "The caller's API keys",
          response: { 200: Type.Array(ApiKey), ...commonErrorResponses },
        },
      },
      async (request) => auth.listApiKeys(currentUser(request).id),
    );

    app.post(
      '/auth/api-keys',
      {
        schema: {
          tags: ['Authentication'],
          summary: 'Create an API key (shown once)',
          body: CreateApiKeyBody,
          response: { 201: CreatedApiKey, ...commonErrorResponses },
        },
      },
      async (request, reply) => {
        const { name, expires_in_days, expires_at, kind, actions, organization, project, application, environment } = request.body;
        const key = await auth.createApiKey(currentUser(request).id, {
          name,
          kind,
          expiresInDays: expires_in_days,
          expiresAt: expires_at ? new Date(expires_at) : undefined,
          scope: { organization, project, application, environment, actions },
        });
        return reply.code(201).send(key);
      },
    );

    app.post(
      '/auth/cli-logins',
      {
        schema: {
          tags: ['Authentication'],
          summary: "Approve a CLI's browser login (the /cli-auth page): a new key for the CLI's loopback callback",
          description:
            'Only the signed-in browser session approves (never an API key; cross-site requests are refused as for every session ' +
            'change). Each code is approved once. The answer names the callback `http://127.0.0.1:{port}/callback?code=…&api_key=…` ' +
            'that the CLI listening there expects (the code lets the CLI check the key answers its own request).',
          body: CliLoginBody,
          response: { 201: CliLoginApproved, ...commonErrorResponses },
        },
      },
      async (request, reply) => {
        const principal = request.principal!;
        if (principal.via !== 'session') throw forbidden('A CLI login is approved in the browser, by the signed-in user');
        const { code, port, client, organization, actions } = request.body;
        const key = await auth.approveCliLogin(principal.user.id, {
          code,
          client: client ?? 'CLI',
          organization,
          actions: actions ?? ['read', 'deploy'],
        });
        const callback = new URL(`http://127.0.0.1:${port}/callback`);
        callback.search = new URLSearchParams({
          code,
          api_key: key.key,
          key_id: key.id,
          username: principal.user.username,
          email: principal.user.email,
        }).toString();
        return reply.code(201).send({ callback: callback.toString(), key: { id: key.id, name: key.name, prefix: key.prefix } });
      },
    );

    app.delete(
      '/auth/api-keys/:id',
      {
        schema: {
          tags: ['Authentication'],
          summary: 'Revoke an API key',
          params: Type.Object({ id: IdParam }),
          response: { 200: Ok, ...commonErrorResponses },
        },
      },
      async (request) => {
        await auth.deleteApiKey(currentUser(request).id, request.params.id);
        return { ok: true };
      },
    );
  };
}
