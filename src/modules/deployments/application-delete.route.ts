import { Type } from 'typebox';
import { commonErrorResponses, ErrorResponse } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import { ApplicationIdParams } from '../applications/index.js';
import type { ApplicationRemoval } from '../../pipeline/index.js';
import type { AddonsService } from '../addons/index.js';
import { AppError } from '../../platform/errors.js';
import { describeAuditedChange } from '../../platform/audit/request-audit.js';

export function applicationDeleteRoutes(
  removal: ApplicationRemoval,
  addons?: Pick<AddonsService, 'addonsToDeleteWith' | 'deleteWithApplication'>,
) {
  return async (app: App) => {
    app.delete(
      '/applications/:application_id',
      {
        schema: {
          tags: ['Applications'],
          summary: 'Delete an application: its pipeline jobs are cancelled, its instances stopped and unrouted, its records removed',
          description:
            'Answers 204 once nothing of it runs or is routed any more. Add-ons attached to it stay in the organization ' +
            '(only the attachments go) unless `with_addons=true`: then each is deleted as `DELETE …/addons/{addon}` does ' +
            '(undeletable during the grace period), organization admins only, and an add-on also attached to another ' +
            'application refuses the whole delete (409, nothing deleted). An application running in a protected ' +
            'environment: organization admins only.',
          params: ApplicationIdParams,
          querystring: Type.Object({
            with_addons: Type.Optional(Type.Boolean({ description: 'Also delete the add-ons attached to it (default false: they stay)' })),
          }),
          response: { 204: Type.Null(), 503: ErrorResponse, ...commonErrorResponses },
        },
      },
      async (request, reply) => {
        const user = currentUser(request);
        const scope = request.principal?.scope;
        // Add-ons belong to the organization: a key limited to a project, an application or an environment may not
        // delete them (as `DELETE …/addons/{addon}` refuses it), even through the application they are attached to.
        if (request.query.with_addons && (scope?.projectId || scope?.applicationId || scope?.environmentId))
          throw new AppError(
            'FORBIDDEN',
            'This API key is limited below its organization; add-ons belong to the organization: delete the application without with_addons, or use a key limited to the organization',
          );
        const doomed = request.query.with_addons && addons ? await addons.addonsToDeleteWith(user.id, request.params.application_id) : [];
        await removal.remove(user, request.params.application_id);
        if (addons) await addons.deleteWithApplication(doomed);
        if (request.query.with_addons) describeAuditedChange({ after: { with_addons: true, addons: doomed.map((addon) => addon.name) } });
        return reply.code(204).send(null);
      },
    );
  };
}
