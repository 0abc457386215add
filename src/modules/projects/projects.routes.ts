import { Type } from 'typebox';
import { commonErrorResponses } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import { CreateProjectBody, ProjectDetail, ProjectParams, ProjectSummary } from './projects.schemas.js';
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
          response: { 200: Type.Array(ProjectSummary), ...commonErrorResponses },
        },
      },
      async (request) => projects.list(currentUser(request).id),
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
