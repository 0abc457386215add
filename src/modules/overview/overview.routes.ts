import { commonErrorResponses } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import { Overview, OVERVIEW_MAX_APPLICATIONS, OverviewQuery } from './overview.schemas.js';
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
          description:
            `The first ${OVERVIEW_MAX_APPLICATIONS} applications by organization, project and application slug unless \`page\` or \`per_page\` is given: ` +
            `then one page (\`per_page\` default and most ${OVERVIEW_MAX_APPLICATIONS}). When more follow, \`truncated\` is true and a \`Link\` ` +
            'header names the next page (`rel="next"`).',
          querystring: OverviewQuery,
          response: { 200: Overview, ...commonErrorResponses },
        },
      },
      async (request, reply) => {
        const { organization, page = 1, per_page = OVERVIEW_MAX_APPLICATIONS } = request.query;
        const answer = await overview.forUser(currentUser(request).id, organization, { page, per_page });
        if (answer.truncated) {
          const path = request.url.split('?')[0];
          const only = organization === undefined ? '' : `&organization=${encodeURIComponent(organization)}`;
          reply.header('link', `<${path}?page=${page + 1}&per_page=${per_page}${only}>; rel="next"`);
        }
        return answer;
      },
    );
  };
}
