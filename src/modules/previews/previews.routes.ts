import { commonErrorResponses } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { Type } from 'typebox';
import { currentUser } from '../auth/index.js';
import { PreviewProjectParams, PreviewSettingsBody, ProjectPreviews } from './previews.schemas.js';
import type { PreviewsService } from './previews.service.js';

const PATH = '/workspaces/:workspace/projects/:project/previews';

/** A project's preview settings and its live previews. */
export function previewsRoutes(previews: PreviewsService) {
  const tags = ['Previews'];
  return async (app: App) => {
    app.get(
      PATH,
      {
        schema: {
          tags,
          summary: "The project's preview settings and its previews (one environment per open pull request)",
          params: PreviewProjectParams,
          response: { 200: ProjectPreviews, ...commonErrorResponses },
        },
      },
      async (request) => previews.get(currentUser(request).id, request.params.workspace, request.params.project),
    );

    app.put(
      PATH,
      {
        schema: {
          tags,
          summary: 'Turn previews on (or change them): template environment, cap, whether secrets are copied (admins)',
          params: PreviewProjectParams,
          body: PreviewSettingsBody,
          response: { 200: ProjectPreviews, ...commonErrorResponses },
        },
      },
      async (request) => previews.configure(currentUser(request).id, request.params.workspace, request.params.project, request.body),
    );

    app.delete(
      PATH,
      {
        schema: {
          tags,
          summary: 'Turn previews off: no new ones; existing previews live until their pull requests close',
          params: PreviewProjectParams,
          response: { 204: Type.Null(), ...commonErrorResponses },
        },
      },
      async (request, reply) => {
        await previews.disable(currentUser(request).id, request.params.workspace, request.params.project);
        return reply.code(204).send(null);
      },
    );
  };
}
