import { commonErrorResponses } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import { EnvParams } from './environments.schemas.js';
import { Maintenance, MaintenanceBody } from './maintenance.schemas.js';
import type { MaintenanceService } from './maintenance.service.js';

const PATH = '/workspaces/:workspace/projects/:project/envs/:env/maintenance';

/** An environment's maintenance mode: read by members, toggled by members (on a protected environment: admins). */
export function maintenanceRoutes(maintenance: MaintenanceService) {
  const tags = ['Environments'];
  return async (app: App) => {
    app.get(
      PATH,
      {
        schema: {
          tags,
          summary: "The environment's maintenance mode",
          params: EnvParams,
          response: { 200: Maintenance, ...commonErrorResponses },
        },
      },
      async (request) => maintenance.get(currentUser(request).id, request.params.workspace, request.params.project, request.params.env),
    );
    app.put(
      PATH,
      {
        schema: {
          tags,
          summary:
            'Turn maintenance mode on or off: while on, the edge answers every request for the environment with a 503 page and Retry-After (a protected environment: admins)',
          params: EnvParams,
          body: MaintenanceBody,
          response: { 200: Maintenance, ...commonErrorResponses },
        },
      },
      async (request) =>
        maintenance.set(currentUser(request).id, request.params.workspace, request.params.project, request.params.env, request.body),
    );
  };
}
