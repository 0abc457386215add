import { Type } from 'typebox';
import { commonErrorResponses, Ok } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import { ApplicationIdParams } from '../applications/index.js';
import { AddDomainBody, Domain, DomainParams } from './domains.schemas.js';
import type { DomainsService } from './domains.service.js';

const BASE = '/applications/:application_id/domains';

/** An application's custom domains (per environment; production when none is named). */
export function domainsRoutes(domains: DomainsService) {
  const tags = ['Domains'];
  return async (app: App) => {
    app.get(
      BASE,
      {
        schema: {
          tags,
          summary: "The application's custom domains",
          params: ApplicationIdParams,
          response: { 200: Type.Array(Domain), ...commonErrorResponses },
        },
      },
      async (request) => domains.list(currentUser(request).id, request.params.application_id),
    );

    app.post(
      BASE,
      {
        schema: {
          tags,
          summary:
            'Claim a host name for an environment (409 when another application proved it); it goes live once verified by a DNS TXT record',
          params: ApplicationIdParams,
          body: AddDomainBody,
          response: { 201: Domain, ...commonErrorResponses },
        },
      },
      async (request, reply) =>
        reply.code(201).send(await domains.add(currentUser(request).id, request.params.application_id, request.body)),
    );

    app.get(
      `${BASE}/:domain_id`,
      {
        schema: {
          tags,
          summary: 'A custom domain: verification and certificate state',
          params: DomainParams,
          response: { 200: Domain, ...commonErrorResponses },
        },
      },
      async (request) => domains.get(currentUser(request).id, request.params.application_id, request.params.domain_id),
    );

    app.post(
      `${BASE}/:domain_id/verify`,
      {
        schema: {
          tags,
          summary:
            'Check ownership (the TXT record `verification.record_name` holds `verification.token`; 409 when another application proved it first); then a certificate is requested',
          params: DomainParams,
          response: { 200: Domain, ...commonErrorResponses },
        },
      },
      async (request) => domains.verify(currentUser(request).id, request.params.application_id, request.params.domain_id),
    );

    app.delete(
      `${BASE}/:domain_id`,
      {
        schema: {
          tags,
          summary: 'Release a custom domain (and its certificate)',
          params: DomainParams,
          response: { 200: Ok, ...commonErrorResponses },
        },
      },
      async (request) => {
        await domains.remove(currentUser(request).id, request.params.application_id, request.params.domain_id);
        return { ok: true };
      },
    );
  };
}
