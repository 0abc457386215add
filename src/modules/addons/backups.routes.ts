import { commonErrorResponses } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import { Addon, AddonBackup, AddonBackups, AddonDrill, AddonParams, DrillCheckBody, RestoreAddonBody } from './addons.schemas.js';
import type { AddonBackupsService } from './backups.service.js';

const BASE = '/organizations/:org_slug/addons/:addon';

/** A Postgres add-on's backups, restores into a fork, and restore drills (docs/addons.md). */
export function backupsRoutes(backups: AddonBackupsService) {
  const tags = ['Add-ons'];
  return async (app: App) => {
    app.get(
      `${BASE}/backups`,
      {
        schema: {
          tags,
          summary: 'Base backups, the window a restore can reach, and the last restore drill',
          params: AddonParams,
          response: { 200: AddonBackups, ...commonErrorResponses },
        },
      },
      async (request) => backups.list(currentUser(request).id, request.params.org_slug, request.params.addon),
    );
    app.post(
      `${BASE}/backups`,
      {
        schema: {
          tags,
          summary: 'Take a base backup now',
          description:
            'On the local runtime it answers once the backup is complete (or failed: 409 with the reason). On Kubernetes ' +
            'CloudNativePG takes it: the answer is the backup `running`, and its status follows the cluster’s Backup.',
          params: AddonParams,
          response: { 201: AddonBackup, ...commonErrorResponses },
        },
      },
      async (request, reply) =>
        reply.code(201).send(await backups.create(currentUser(request).id, request.params.org_slug, request.params.addon)),
    );
    app.post(
      `${BASE}/restore`,
      {
        schema: {
          tags,
          summary:
            'Restore into a NEW add-on (a fork) at a time, a backup or a restore point; answers at once, progress in its status_detail; 422 outside the retention window',
          params: AddonParams,
          body: RestoreAddonBody,
          response: { 202: Addon, ...commonErrorResponses },
        },
      },
      async (request, reply) =>
        reply.code(202).send(await backups.restore(currentUser(request).id, request.params.org_slug, request.params.addon, request.body)),
    );
    app.post(
      `${BASE}/drills`,
      {
        schema: {
          tags,
          summary: 'A restore drill now: the latest backup restored into a scratch server, started, rows counted per table',
          params: AddonParams,
          response: { 200: AddonDrill, ...commonErrorResponses },
        },
      },
      async (request) => backups.drill(currentUser(request).id, request.params.org_slug, request.params.addon),
    );
    app.put(
      `${BASE}/drills/check`,
      {
        schema: {
          tags,
          summary: "Set the query each restore drill runs on its restored copy (read-only, as the application's role, 30 s at most)",
          params: AddonParams,
          body: DrillCheckBody,
          response: { 200: Addon, ...commonErrorResponses },
        },
      },
      async (request) => backups.setDrillCheck(currentUser(request).id, request.params.org_slug, request.params.addon, request.body.query),
    );
  };
}
