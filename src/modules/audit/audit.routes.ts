import { commonErrorResponses } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser, requireSiteAdmin } from '../../platform/http/principal.js';
import { AuditList, AuditOrgParams, AuditQuery } from './audit.schemas.js';
import type { AuditService } from './audit.service.js';

export function auditRoutes(audit: AuditService) {
  const tags = ['Audit log'];
  const description =
    'Every change made through the API, newest first: who (user and credential), what (`action` is the route), which resource, ' +
    'from which address, when, and non-secret fields of the change. Filters: `actor` (user id or username), `resource_type`, ' +
    '`resource_id`, `since`/`until` (ISO-8601).';
  return async (app: App) => {
    app.get(
      '/organizations/:org_slug/audit-log',
      {
        schema: {
          tags,
          summary: "An organization's audit log (its admins)",
          description,
          params: AuditOrgParams,
          querystring: AuditQuery,
          response: { 200: AuditList, ...commonErrorResponses },
        },
      },
      async (request) => audit.forOrganization(currentUser(request).id, request.params.org_slug, request.query),
    );

    app.get(
      '/audit-log',
      {
        schema: {
          tags,
          summary: 'The whole audit log (site administrators)',
          description,
          querystring: AuditQuery,
          response: { 200: AuditList, ...commonErrorResponses },
        },
      },
      async (request) => {
        requireSiteAdmin(request);
        return audit.list(request.query);
      },
    );
  };
}
