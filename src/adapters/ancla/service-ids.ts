import type { OrganizationScope } from '../../modules/organizations/index.js';
import type { App } from '../../platform/http/types.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Ancla's Go SDK names a service by its id where its other clients use the slug (`deploy`,
 * `scale`, `pipeline-status`: "the svcID is the service's unique identifier (not the slug
 * path)"). In the adapter's scope, a `:service` that is the id of an application of the path's
 * project is read as that application's slug, once, before anything else sees the request; the
 * route then checks access as for the slug. An id of anything else stays as sent (and is a 404).
 */
export function serviceIds(app: App, scope: OrganizationScope): void {
  app.addHook('onRequest', async (request) => {
    const params = request.params as { workspace?: string; project?: string; service?: string };
    if (!params.service || !params.workspace || !params.project || !UUID.test(params.service)) return;
    const slug = await scope.applicationSlugById(params.workspace, params.project, params.service);
    if (slug) params.service = slug;
  });
}
