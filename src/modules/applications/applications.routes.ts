import { Type } from 'typebox';
import { commonErrorResponses, EnvironmentQuery } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import { ProjectParams } from '../projects/index.js';
import {
  ApplicationDetail,
  ApplicationIdParams,
  ApplicationListQuery,
  ApplicationSlugParams,
  ApplicationSummary,
  CreateApplicationBody,
  ScaleBody,
  SettingsBody,
} from './applications.schemas.js';
import type { ApplicationsService } from './applications.service.js';

export function applicationsRoutes(apps: ApplicationsService) {
  const tags = ['Applications'];
  return async (app: App) => {
    app.get(
      '/applications/:org_slug/:project_slug',
      {
        schema: {
          tags,
          summary: "A project's applications",
          description:
            'Sorted by slug, in pages of `per_page` (default and most 100): when more follow, a `Link` header names the next page (`rel="next"`).',
          params: ProjectParams,
          querystring: ApplicationListQuery,
          response: { 200: Type.Array(ApplicationSummary), ...commonErrorResponses },
        },
      },
      async (request, reply) => {
        const { page = 1, per_page = 100 } = request.query;
        const { items, hasMore } = await apps.list(currentUser(request).id, request.params.org_slug, request.params.project_slug, {
          page,
          per_page,
        });
        if (hasMore) {
          const path = request.url.split('?')[0];
          reply.header('link', `<${path}?page=${page + 1}&per_page=${per_page}>; rel="next"`);
        }
        return items;
      },
    );

    app.get(
      '/applications/:org_slug/:project_slug/:app_slug',
      {
        schema: {
          tags,
          summary: 'An application; its latest_* records come from every environment, or from `?environment=<slug>`',
          params: ApplicationSlugParams,
          querystring: EnvironmentQuery,
          response: { 200: ApplicationDetail, ...commonErrorResponses },
        },
      },
      async (request, reply) => {
        const { org_slug, project_slug, app_slug } = request.params;
        const userId = currentUser(request).id;
        if (request.query.environment === undefined) {
          // The hot path: PostgreSQL writes the answer, sent as it is (`as never`: the typed reply expects the schema's object).
          const json = await apps.detailJsonBySlugs(userId, org_slug, project_slug, app_slug);
          if (json !== undefined) return reply.type('application/json; charset=utf-8').send(json as never);
        }
        return apps.detailBySlugs(userId, org_slug, project_slug, app_slug, request.query.environment);
      },
    );

    app.post(
      '/applications',
      {
        schema: {
          tags,
          summary: 'Create an application',
          body: CreateApplicationBody,
          response: { 201: ApplicationDetail, ...commonErrorResponses },
        },
      },
      async (request, reply) => reply.code(201).send(await apps.create(currentUser(request).id, request.body)),
    );

    app.patch(
      '/applications/:application_id/settings',
      {
        schema: {
          tags,
          summary: 'Change source, health check and deployment settings',
          params: ApplicationIdParams,
          body: SettingsBody,
          response: { 200: ApplicationDetail, ...commonErrorResponses },
        },
      },
      async (request) => apps.updateSettings(currentUser(request).id, request.params.application_id, request.body),
    );

    app.post(
      '/applications/:application_id/scale',
      {
        schema: {
          tags,
          summary: 'Set instance counts and pod classes per process type (merged into the current ones)',
          params: ApplicationIdParams,
          body: ScaleBody,
          response: { 200: ApplicationDetail, ...commonErrorResponses },
        },
      },
      async (request) => apps.scale(currentUser(request).id, request.params.application_id, request.body),
    );
  };
}
