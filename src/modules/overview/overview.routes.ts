import { commonErrorResponses } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import { Overview, OverviewQuery } from './overview.schemas.js';
import type { OverviewService } from './overview.service.js';

export function overviewRoutes(overview: OverviewService) {
  return async (app: App) => {
    app.get(
      '/overview',
      {
        schema: {
          tags: ['Applications'],
          summary:
            "Every application of the caller's organizations (or of ?organization=) with production's state: serving release, instances, newest deployment and who started it, the last hour's requests and 5xx; failing first",
          querystring: OverviewQuery,
          response: { 200: Overview, ...commonErrorResponses },
        },
      },
      async (request) => overview.forUser(currentUser(request).id, request.query.organization),
    );
  };
}
