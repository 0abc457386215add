import type { AppContext } from '../../platform/context.js';
import type { PlatformLogger, Wired } from '../../platform/wiring.js';
import type { ApplicationsService } from '../applications/index.js';
import type { DeploymentsService } from '../../pipeline/index.js';
import { AcmeIssuer } from './acme-issuer.js';
import type { DomainsRepository } from './domains.repository.js';
import { domainsRoutes } from './domains.routes.js';
import { DomainsService } from './domains.service.js';

/** Custom domains; certificates by ACME unless the edge issues its own (`requestsCertificates` false). */
export function wireDomains(deps: {
  ctx: AppContext;
  repository: DomainsRepository;
  apps: ApplicationsService;
  deployments: DeploymentsService;
  requestsCertificates: boolean;
  /** Served names changed (null: only a certificate): the edge reloads, a cluster re-applies the application's Ingress. */
  namesChanged: (applicationId: string | null) => Promise<void>;
  log: PlatformLogger;
}) {
  const { ctx } = deps;
  const acme =
    ctx.config.ACME_DIRECTORY_URL && deps.requestsCertificates
      ? new AcmeIssuer(
          { directoryUrl: ctx.config.ACME_DIRECTORY_URL, email: ctx.config.ACME_EMAIL, caFile: ctx.config.ACME_CA_FILE },
          deps.repository,
          ctx.secrets,
        )
      : null;
  const domains = new DomainsService(
    ctx.db,
    deps.repository,
    ctx.secrets,
    deps.apps,
    deps.deployments,
    {
      routerDomain: ctx.config.ROUTER_DOMAIN,
      ownership: { dnsServer: ctx.config.DOMAIN_DNS_SERVER },
      renewDays: ctx.config.ACME_RENEW_DAYS,
    },
    acme,
    deps.namesChanged,
    deps.log.child({ component: 'domains' }),
  );
  return { domains, routes: [domainsRoutes(domains)], sweepers: [{ sweep: () => domains.renewDue() }] } satisfies Wired;
}
