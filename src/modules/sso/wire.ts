import type { AppContext } from '../../platform/context.js';
import type { Wired } from '../../platform/wiring.js';
import type { OrganizationAccess } from '../organizations/index.js';
import { OidcClients } from './oidc-client.js';
import type { SsoRepository } from './sso.repository.js';
import { ssoRoutes } from './sso.routes.js';
import { SsoService } from './sso.service.js';

/** Single sign-on through OpenID Connect issuers; sign-ins never finished are swept with expired sessions. */
export function wireSso(deps: { ctx: AppContext; repository: SsoRepository; access: OrganizationAccess }) {
  const { config } = deps.ctx;
  const base = (config.DASHBOARD_URL ?? `http://localhost:${config.PORT}`).replace(/\/+$/, '');
  const sso = new SsoService(deps.ctx, deps.repository, new OidcClients(), deps.access, {
    callbackUrl: `${base}/v1/auth/oidc/callback`,
    sessionTtlHours: config.SESSION_TTL_HOURS,
  });
  return { sso, routes: [ssoRoutes(sso, deps.ctx.db)], sweepers: [{ sweep: () => sso.pruneExpired() }] } satisfies Wired;
}
