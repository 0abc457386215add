import { Type } from 'typebox';
import { commonErrorResponses } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import { CreateProjectBody, ProjectDetail, ProjectListQuery, ProjectParams, ProjectSummary } from './projects.schemas.js';
import { ProjectsService } from './projects.service.js';

export function projectsRoutes(projects: ProjectsService) {
  const tags = ['Projects'];
  return async (app: App) => {
    app.get(
      '/projects',
      {
        schema: {
          tags,
          summary: "Projects in the caller's organizations",
          description:
            'Sorted by organization and project slug. The whole list unless `page` or `per_page` is given: then one page ' +
            '(`per_page` default and most 100), and when more follow, a `Link` header names the next page (`rel="next"`).',
          querystring: ProjectListQuery,
          response: { 200: Type.Array(ProjectSummary), ...commonErrorResponses },
        },
      },
      async (request, reply) => {
        const { organization, page, per_page } = request.query;
        if (page === undefined && per_page === undefined) {
          // The whole list can be thousands of rows: PostgreSQL writes the JSON, sent as it is (no row parsing or re-serializing;
          // `as never`: the typed reply expects the schema's objects, this is their JSON text).
          return reply
            .type('application/json; charset=utf-8')
            .send((await projects.listJson(currentUser(request).id, { organization })) as never);
        }
        const pageSize = per_page ?? 100;
        const { items, hasMore } = await projects.page(currentUser(request).id, { organization, page: page ?? 1, per_page: pageSize });
        if (hasMore) {
          const path = request.url.split('?')[0];
          const only = organization === undefined ? '' : `&organization=${organization}`;
          reply.header('link', `<${path}?page=${(page ?? 1) + 1}&per_page=${pageSize}${only}>; rel="next"`);
        }
        return items;
      },
    );

    app.get(
      '/projects/:org_slug/:project_slug',
      {
        schema: { tags, summary: 'A project', params: ProjectParams, response: { 200: ProjectDetail, ...commonErrorResponses } },
      },
      async (request) => projects.detail(currentUser(request).id, request.params.org_slug, request.params.project_slug),
    );

    app.post(
      '/projects',
      {
        schema: { tags, summary: 'Create a project', body: CreateProjectBody, response: { 201: ProjectDetail, ...commonErrorResponses } },
      },
      async (request, reply) => reply.code(201).send(await projects.create(currentUser(request).id, request.body)),
    );
  };
}
