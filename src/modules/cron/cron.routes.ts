import { Type } from 'typebox';
import { commonErrorResponses, Ok } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { ApplicationIdParams } from '../applications/index.js';
import { currentUser } from '../auth/index.js';
import { RunList } from '../deployments/index.js';
import { CronBody, CronEntry, CronEnvironmentQuery, CronParams, CronRunsQuery } from './cron.schemas.js';
import type { CronService } from './cron.service.js';

/** Scheduled jobs (cron entries) per application environment (`?environment=<slug>`, default production). */
export function cronRoutes(cron: CronService) {
  const tags = ['Scheduled jobs'];
  return async (app: App) => {
    app.get(
      '/applications/:application_id/cron',
      {
        schema: {
          tags,
          summary: "The application's cron entries (every environment, or `?environment=<slug>`) with their next run",
          params: ApplicationIdParams,
          querystring: CronEnvironmentQuery,
          response: { 200: Type.Array(CronEntry), ...commonErrorResponses },
        },
      },
      async (request) => cron.list(currentUser(request).id, request.params.application_id, request.query.environment),
    );

    app.put(
      '/applications/:application_id/cron/:name',
      {
        schema: {
          tags,
          summary: 'Create or replace a cron entry: its command runs as a one-off run of the serving release on the schedule',
          params: CronParams,
          querystring: CronEnvironmentQuery,
          body: CronBody,
          response: { 200: CronEntry, ...commonErrorResponses },
        },
      },
      async (request) =>
        cron.put(currentUser(request).id, request.params.application_id, request.params.name, request.query.environment, request.body),
    );

    app.delete(
      '/applications/:application_id/cron/:name',
      {
        schema: {
          tags,
          summary: 'Remove a cron entry (its past runs stay; a slipway.json entry comes back with the next deployment)',
          params: CronParams,
          querystring: CronEnvironmentQuery,
          response: { 200: Ok, ...commonErrorResponses },
        },
      },
      async (request) => {
        await cron.remove(currentUser(request).id, request.params.application_id, request.params.name, request.query.environment);
        return { ok: true };
      },
    );

    app.get(
      '/applications/:application_id/cron/:name/runs',
      {
        schema: {
          tags,
          summary: "A cron entry's runs, newest first (each one's log and exit code: GET /runs/{id} and /runs/{id}/log)",
          params: CronParams,
          querystring: CronRunsQuery,
          response: { 200: RunList, ...commonErrorResponses },
        },
      },
      async (request) => cron.runsOf(currentUser(request).id, request.params.application_id, request.params.name, request.query),
    );
  };
}
