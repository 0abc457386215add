import type { SigningKeys } from '../../platform/crypto/signing-key.js';
import { AppError } from '../../platform/errors.js';
import type { App } from '../../platform/http/types.js';
import { invalidCredentials, RegistryTokenService, type RegistryCaller } from './registry.service.js';
import { SigningCert, TokenForm, TokenQuery, TokenResponse, tokenErrors } from './registry.schemas.js';

const BASIC_CHALLENGE = 'Basic realm="Slipway registry token service", charset="UTF-8"';

/** OAuth2 posts `application/x-www-form-urlencoded`; a repeated field becomes an array. */
function parseForm(text: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of new URLSearchParams(text)) {
    const prior = out[name];
    out[name] = prior === undefined ? value : Array.isArray(prior) ? [...prior, value] : [prior, value];
  }
  return out;
}

const asList = (v: string | string[] | undefined) => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/**
 * The registry token service (`/integrations/docker/auth`) and the certificate a registry
 * trusts. Public in the route sense: they authenticate with Basic or the form themselves.
 */
export function registryRoutes(keys: SigningKeys, tokens: RegistryTokenService) {
  return async (app: App) => {
    await keys.ensure(); // first start generates the key, so the certificate can be fetched at once

    app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 64 * 1024 }, (_req, body, done) => {
      done(null, parseForm(body as string));
    });

    app.get(
      '/integrations/docker/auth',
      {
        config: { public: true },
        schema: {
          tags: ['Integrations'],
          summary: 'Registry token (Docker registry token authentication): HTTP Basic, password = API key or registry refresh token',
          security: [], // HTTP Basic with an API key or refresh token, checked by the handler
          querystring: TokenQuery,
          response: { 200: TokenResponse, ...tokenErrors },
        },
      },
      async (request, reply) => {
        const caller = await tokens.fromBasic(request.headers.authorization);
        if (!caller) {
          reply.header('www-authenticate', BASIC_CHALLENGE);
          throw invalidCredentials();
        }
        const q = request.query;
        return tokens.issue(caller, { service: q.service, scopes: q.scope ?? [], offline: q.offline_token === true });
      },
    );

    app.post(
      '/integrations/docker/auth',
      {
        config: { public: true },
        schema: {
          tags: ['Integrations'],
          summary: 'Registry token, OAuth2 form: grant_type=password (API key) or refresh_token',
          security: [],
          body: TokenForm,
          response: { 200: TokenResponse, ...tokenErrors },
        },
      },
      async (request, reply) => {
        const form = request.body;
        const service = tokens.serviceOf(form.service);
        let caller: RegistryCaller | null;
        if (form.grant_type === 'password') {
          if (!form.password) throw new AppError('BAD_REQUEST', 'grant_type=password needs a password (an API key)');
          caller = await tokens.fromApiKey(form.password);
        } else if (form.grant_type === 'refresh_token') {
          if (!form.refresh_token) throw new AppError('BAD_REQUEST', 'grant_type=refresh_token needs a refresh_token');
          caller = await tokens.fromRefreshToken(form.refresh_token, service);
        } else {
          throw new AppError('BAD_REQUEST', `Unsupported grant_type "${form.grant_type}"; use password or refresh_token`);
        }
        if (!caller) {
          reply.header('www-authenticate', BASIC_CHALLENGE);
          throw new AppError('UNAUTHENTICATED', form.grant_type === 'password' ? 'Invalid API key' : 'Invalid or expired refresh token');
        }
        return tokens.issue(caller, {
          service,
          scopes: asList(form.scope),
          offline: form.grant_type === 'password' && form.access_type === 'offline',
        });
      },
    );

    app.get(
      '/integrations/signing-cert',
      {
        config: { public: true },
        schema: {
          tags: ['Integrations'],
          summary: 'PEM certificate(s) whose key signs registry tokens: a registry rootcertbundle',
          security: [],
          response: { 200: SigningCert },
        },
      },
      async () => {
        const key = await keys.current();
        return { certificate: await keys.bundle(), key_id: key.kid };
      },
    );
  };
}
