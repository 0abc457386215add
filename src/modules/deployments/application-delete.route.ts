import { Type } from 'typebox';
import { commonErrorResponses, ErrorResponse } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import { ApplicationIdParams } from '../applications/index.js';
import type { ApplicationRemoval } from '../../pipeline/index.js';

export function applicationDeleteRoutes(removal: ApplicationRemoval) {
  return async (app: App) => {
    app.delete(
      '/applications/:application_id',
      {
        schema: {
          tags: ['Applications'],
          summary: 'Delete an application: its pipeline jobs are cancelled, its instances stopped and unrouted, its records removed',
          description:
            'Answers 204 once nothing of it runs or is routed any more. Add-ons attached to it stay in the organization ' +
            '(only the attachments go). An application running in a protected environment: organization admins only.',
          params: ApplicationIdParams,
          response: { 204: Type.Null(), 503: ErrorResponse, ...commonErrorResponses },
        },
      },
      async (request, reply) => {
        await removal.remove(currentUser(request), request.params.application_id);
        return reply.code(204).send(null);
      },
    );
  };
}
