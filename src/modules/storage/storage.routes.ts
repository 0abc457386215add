import { commonErrorResponses } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import { OrgSlugParams } from '../organizations/index.js';
import { OrganizationUsage } from './storage.schemas.js';
import type { StorageService } from './storage.service.js';

export function storageRoutes(storage: StorageService) {
  const tags = ['Organizations'];
  return async (app: App) => {
    app.get(
      '/organizations/:org_slug/usage',
      {
        schema: {
          tags,
          summary: "The organization's disk use by kind and its quota (members)",
          params: OrgSlugParams,
          response: { 200: OrganizationUsage, ...commonErrorResponses },
        },
      },
      async (request) => storage.view(currentUser(request).id, request.params.org_slug),
    );
  };
}
