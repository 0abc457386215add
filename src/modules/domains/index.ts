export { DomainsService, type DomainsSettings } from './domains.service.js';
export { AcmeIssuer } from './acme-issuer.js';
export { domainsRoutes } from './domains.routes.js';
