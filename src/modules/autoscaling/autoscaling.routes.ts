import { commonErrorResponses, Ok } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { Type } from 'typebox';
import { ApplicationIdParams } from '../applications/index.js';
import { currentUser } from '../auth/index.js';
import {
  AutoscaleBody,
  AutoscaleEnvironmentQuery,
  AutoscalePolicy,
  ProcessTypeParams,
  ScaleEventList,
  ScaleEventsQuery,
} from './autoscaling.schemas.js';
import type { AutoscalingService } from './autoscaling.service.js';

/** Autoscaling per process type (`?environment=<slug>`, default production) and the scale events it records. */
export function autoscalingRoutes(autoscaling: AutoscalingService) {
  const tags = ['Autoscaling'];
  return async (app: App) => {
    app.get(
      '/applications/:application_id/autoscaling',
      {
        schema: {
          tags,
          summary: "The application's autoscaling policies (every environment, or `?environment=<slug>`)",
          params: ApplicationIdParams,
          querystring: AutoscaleEnvironmentQuery,
          response: { 200: Type.Array(AutoscalePolicy), ...commonErrorResponses },
        },
      },
      async (request) => autoscaling.list(currentUser(request).id, request.params.application_id, request.query.environment),
    );

    app.put(
      '/applications/:application_id/autoscaling/:process_type',
      {
        schema: {
          tags,
          summary: 'Autoscale a process type between min and max instances towards a CPU or requests-per-second target',
          params: ProcessTypeParams,
          querystring: AutoscaleEnvironmentQuery,
          body: AutoscaleBody,
          response: { 200: AutoscalePolicy, ...commonErrorResponses },
        },
      },
      async (request) =>
        autoscaling.put(
          currentUser(request).id,
          request.params.application_id,
          request.params.process_type,
          request.query.environment,
          request.body,
        ),
    );

    app.delete(
      '/applications/:application_id/autoscaling/:process_type',
      {
        schema: {
          tags,
          summary: 'Stop autoscaling a process type (its count stays where it is)',
          params: ProcessTypeParams,
          querystring: AutoscaleEnvironmentQuery,
          response: { 200: Ok, ...commonErrorResponses },
        },
      },
      async (request) => {
        await autoscaling.remove(
          currentUser(request).id,
          request.params.application_id,
          request.params.process_type,
          request.query.environment,
        );
        return { ok: true };
      },
    );

    app.get(
      '/applications/:application_id/scale-events',
      {
        schema: {
          tags,
          summary: 'Process count changes the autoscaler made, newest first, each with its reason and measurement',
          params: ApplicationIdParams,
          querystring: ScaleEventsQuery,
          response: { 200: ScaleEventList, ...commonErrorResponses },
        },
      },
      async (request) => autoscaling.events(currentUser(request).id, request.params.application_id, request.query),
    );
  };
}
