import type { Db } from '../../platform/db/database.js';
import { conflict, forbidden, invalid, isUniqueViolation, notFound } from '../../platform/errors.js';
import { requireDeployAccess } from '../../platform/access/environment-protection.js';
import { mountPathProblem } from '../../platform/volumes/index.js';
import type { ApplicationsService } from '../applications/index.js';
import { effectiveProcessSettings } from '../environments/index.js';
import type { OrganizationScope } from '../organizations/index.js';
import { chosenEnvironmentId } from '../../pipeline/index.js';
import type { VolumesRepository } from './volumes.repository.js';
import type { VolumeRow, VolumesService } from './volumes.service.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface AttachVolumeRequest {
  application_id: string;
  environment?: string | undefined;
  name?: string | undefined;
  mount_path?: string | undefined;
  process_type?: string | undefined;
}

/**
 * Volumes whose application (or environment) was deleted: they keep their data, their disk and
 * their place in the organization's quota until an admin re-attaches one to another application
 * of the organization (its files become that application's) or deletes it.
 */
export class DetachedVolumesService {
  constructor(
    private readonly db: Db,
    private readonly repo: VolumesRepository,
    private readonly scope: OrganizationScope,
    private readonly apps: ApplicationsService,
    private readonly volumes: VolumesService,
    /** The machine's disks (null where this process runs no local runtime with its sandbox). */
    private readonly disks: { remove(id: string): Promise<void> } | null,
  ) {}

  async list(userId: string, orgSlug: string) {
    const { organization } = await this.scope.organization(userId, orgSlug);
    return Promise.all((await this.repo.detached(organization.id)).map((v) => this.volumes.view(v)));
  }

  /** Mounts a detached volume in an application environment of the same organization, and redeploys it (stop-then-start). */
  async attach(userId: string, orgSlug: string, volumeId: string, body: AttachVolumeRequest) {
    const { row } = await this.findForAdmin(userId, orgSlug, volumeId);
    const app = await this.apps.authorize(userId, body.application_id).catch(() => null);
    if (!app || app.organization_id !== row.organization_id)
      throw invalid('application_id', "not an application of the volume's organization");
    const environmentId = await chosenEnvironmentId(this.db, app.id, body.environment);
    await requireDeployAccess(this.db, userId, environmentId);
    const mountPath = body.mount_path ?? row.mount_path;
    const pathProblem = mountPathProblem(mountPath);
    if (pathProblem) throw invalid('mount_path', pathProblem);
    const processType = body.process_type ?? row.process_type;
    const count = (await effectiveProcessSettings(this.db, app.id, environmentId)).process_counts[processType];
    if (count !== undefined && count > 1)
      throw invalid(
        'process_type',
        `${processType} runs ${count} instances; a volume is mounted by one instance only: scale it to 1 first`,
      );
    const name = body.name ?? row.name;
    try {
      await this.db.transaction().execute(async (trx) => {
        const updated = await this.repo.withDb(trx).update(row.id, {
          application_id: app.id,
          environment_id: environmentId,
          name,
          mount_path: mountPath,
          process_type: processType,
        });
        await this.volumes.publish(trx, updated, 'volume.attached', {});
      });
    } catch (err) {
      if (isUniqueViolation(err, 'volumes_environment_name'))
        throw conflict(`This application environment already has a volume named '${name}': give the volume another name`);
      if (isUniqueViolation(err, 'volumes_environment_mount_path'))
        throw conflict(`Another volume of this application environment is mounted at ${mountPath} in ${processType}`);
      throw err;
    }
    const deploymentId = await this.volumes.redeploy(app.id, environmentId);
    return { volume: await this.volumes.view(await this.reread(row.id)), deployment_id: deploymentId };
  }

  /** Deletes a detached volume and its data; an attached one is deleted through its application. */
  async remove(userId: string, orgSlug: string, volumeId: string) {
    const { row } = await this.findForAdmin(userId, orgSlug, volumeId);
    const view = await this.volumes.view(row);
    await this.db.transaction().execute(async (trx) => {
      await this.repo.withDb(trx).delete(row.id);
      await this.volumes.publish(trx, row, 'volume.deleted', {});
    });
    await this.disks?.remove(row.id);
    return { ...view, usage: null };
  }

  /** A detached volume of the organization, for one of its admins (it belongs to no application to grant rights on). */
  private async findForAdmin(userId: string, orgSlug: string, volumeId: string) {
    const { organization, admin } = await this.scope.organization(userId, orgSlug);
    const row = UUID.test(volumeId) ? await this.repo.byId(volumeId) : undefined;
    if (!row || row.organization_id !== organization.id) throw notFound('Volume');
    if (!admin) throw forbidden("Only the organization's admins can re-attach or delete a volume of a deleted application");
    if (row.application_id !== null && row.environment_id !== null)
      throw conflict(
        `Volume '${row.name}' is attached to an application: change or delete it through /v1/applications/${row.application_id}/volumes`,
      );
    return { row, organization };
  }

  private async reread(id: string): Promise<VolumeRow> {
    const row = await this.repo.byId(id);
    if (!row) throw notFound('Volume');
    return row;
  }
}
