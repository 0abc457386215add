import { commonErrorResponses } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import { ComposeApplied, ComposeBody, ComposePlan, ProjectIdParams } from './compose.schemas.js';
import type { ComposeService } from './compose.service.js';

/** `slipway compose import`: plan, then apply (docs/compose.md). */
export function composeRoutes(compose: ComposeService) {
  const tags = ['Compose'];
  return async (app: App) => {
    app.post(
      '/projects/:project_id/compose/plan',
      {
        schema: {
          tags,
          summary: 'What importing a Compose file would create, update or leave unchanged, and what it cannot map (changes nothing)',
          description: 'A malformed file is a 422 naming its line.',
          params: ProjectIdParams,
          body: ComposeBody,
          response: { 200: ComposePlan, ...commonErrorResponses },
        },
      },
      async (request) => compose.plan(currentUser(request).id, request.params.project_id, request.body),
    );

    app.post(
      '/projects/:project_id/compose/apply',
      {
        schema: {
          tags,
          summary: 'Import a Compose file: create or update its applications and add-ons, then build and deploy what changed',
          description:
            'Answers with the plan it carried out and the deploy chains it started (they run on; follow them as any deploy). ' +
            'Importing the same file again changes nothing and deploys nothing.',
          params: ProjectIdParams,
          body: ComposeBody,
          response: { 200: ComposeApplied, ...commonErrorResponses },
        },
      },
      async (request) => compose.apply(currentUser(request).id, request.params.project_id, request.body),
    );
  };
}
