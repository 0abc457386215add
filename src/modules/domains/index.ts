export { DomainsService, type DomainsSettings } from './domains.service.js';
export { AcmeIssuer } from './acme-issuer.js';
export { DomainsRepository } from './domains.repository.js';
export { domainsRoutes } from './domains.routes.js';
export * from './wire.js';
