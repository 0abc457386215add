import { commonErrorResponses, ErrorResponse } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import { EnvDeploy, PromoteBody } from './env-deploys.schemas.js';
import type { EnvDeploysService } from '../../pipeline/index.js';
import { EnvParams } from '../environments/index.js';

const BASE = '/workspaces/:workspace/projects/:project/envs/:env';

/**
 * Promotion into an environment. Starting a deploy and reading an environment's deploys are
 * Ancla-shaped routes over the same service: src/adapters/ancla/env-deploys.routes.ts.
 */
export function envDeploysRoutes(deploys: EnvDeploysService) {
  const tags = ['Environments'];
  const errors = { ...commonErrorResponses, 503: ErrorResponse };
  return async (app: App) => {
    app.post(
      `${BASE}/promote`,
      {
        schema: {
          tags,
          summary:
            'Promote: deploy here the release (same image, same configuration) that serves each service (or `service`) in `from`, without rebuilding',
          params: EnvParams,
          body: PromoteBody,
          response: { 202: EnvDeploy, ...errors },
        },
      },
      async (request, reply) => {
        const p = request.params;
        return reply.code(202).send(await deploys.promote(currentUser(request).id, p.workspace, p.project, p.env, request.body));
      },
    );
  };
}
