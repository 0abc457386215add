import { commonErrorResponses } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import { Overview, OVERVIEW_MAX_APPLICATIONS, OVERVIEW_MAX_PER_PAGE, OverviewQuery } from './overview.schemas.js';
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
            `then one page (\`per_page\` default and most ${OVERVIEW_MAX_PER_PAGE}). When more follow, \`truncated\` is true and a \`Link\` ` +
            'header names the next page (`rel="next"`).',
          querystring: OverviewQuery,
          response: { 200: Overview, ...commonErrorResponses },
        },
      },
      async (request, reply) => {
        const { organization } = request.query;
        const paged = request.query.page !== undefined || request.query.per_page !== undefined;
        const page = request.query.page ?? 1;
        const per_page = request.query.per_page ?? (paged ? OVERVIEW_MAX_PER_PAGE : OVERVIEW_MAX_APPLICATIONS);
        const answer = await overview.forUser(currentUser(request).id, organization, { page, per_page });
        if (answer.truncated) {
          const path = request.url.split('?')[0];
          const only = organization === undefined ? '' : `&organization=${encodeURIComponent(organization)}`;
          // The unpaged first 200 go on as pages of 100 (the most a page holds): the next starts at page 3.
          const size = Math.min(per_page, OVERVIEW_MAX_PER_PAGE);
          reply.header('link', `<${path}?page=${(page * per_page) / size + 1}&per_page=${size}${only}>; rel="next"`);
        }
        return answer;
      },
    );
  };
}
