import { v7 as uuidv7 } from 'uuid';
import type { Selectable } from 'kysely';
import type { Db } from '../../platform/db/database.js';
import type { VolumesTable } from '../../platform/db/schema.js';
import { conflict, invalid, isUniqueViolation, notFound } from '../../platform/errors.js';
import { iso } from '../../platform/http/schemas.js';
import { requireDeployAccess } from '../../platform/access/environment-protection.js';
import { publishWebhookEvent, type WebhookEvent } from '../../platform/webhook-events.js';
import { mountPathProblem, type VolumeDisks } from '../../platform/volumes/index.js';
import type { ApplicationsService } from '../applications/index.js';
import { effectiveProcessSettings } from '../environments/index.js';
import { chosenEnvironmentId, type DeploymentsService } from '../../pipeline/index.js';
import type { VolumesRepository } from './volumes.repository.js';

export type VolumeRow = Selectable<VolumesTable> & { environment: string | null };

/** What the service needs of the machine's disks: where this process runs the local runtime with its sandbox. */
export interface VolumeMachine {
  disks: VolumeDisks;
}

const MIB = 1024 * 1024;
/** Volumes one organization may have (each is a loop device and a mount on the machine). */
export const MAX_VOLUMES_PER_ORGANIZATION = 50;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Persistent volumes of an application environment: a disk of a fixed size mounted at a path
 * in one process type's single instance. Creating, growing or deleting one redeploys the current
 * release (stop-then-start) so the instance gains, sees grown or loses it.
 */
export class VolumesService {
  constructor(
    private readonly db: Db,
    private readonly repo: VolumesRepository,
    private readonly apps: ApplicationsService,
    private readonly deployments: DeploymentsService,
    /** Null where this process runs no local runtime (Kubernetes: a PersistentVolumeClaim each; usage unknown here). */
    private readonly machine: VolumeMachine | null,
    /** Refuses (409) `bytes` more of volumes past the organization's disk quota (the storage module's check). */
    private readonly requireRoom: (organizationId: string, bytes: number) => Promise<void> = async () => {},
  ) {}

  async list(userId: string, applicationId: string, environment?: string) {
    const app = await this.apps.authorize(userId, applicationId);
    const environmentId = environment ? await chosenEnvironmentId(this.db, app.id, environment) : undefined;
    return Promise.all((await this.repo.list(app.id, environmentId)).map((v) => this.view(v)));
  }

  async show(userId: string, applicationId: string, volume: string, environment?: string) {
    const app = await this.apps.authorize(userId, applicationId);
    return this.view(await this.find(app.id, volume, environment));
  }

  async create(
    userId: string,
    applicationId: string,
    body: { name: string; mount_path: string; size_mib: number; process_type?: string | undefined; environment?: string | undefined },
  ) {
    const app = await this.apps.authorize(userId, applicationId);
    const environmentId = await chosenEnvironmentId(this.db, app.id, body.environment);
    await requireDeployAccess(this.db, userId, environmentId);
    const pathProblem = mountPathProblem(body.mount_path);
    if (pathProblem) throw invalid('mount_path', pathProblem);
    const processType = body.process_type ?? 'web';
    const count = (await effectiveProcessSettings(this.db, app.id, environmentId)).process_counts[processType];
    if (count !== undefined && count > 1)
      throw invalid(
        'process_type',
        `${processType} runs ${count} instances; a volume is mounted by one instance only: scale ${processType} to 1 first`,
      );
    const organizationId = await this.organizationOf(app.id);
    const existing = await this.db
      .selectFrom('volumes')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('organization_id', '=', organizationId)
      .executeTakeFirstOrThrow();
    if (Number(existing.n) >= MAX_VOLUMES_PER_ORGANIZATION)
      throw conflict(`The organization has ${MAX_VOLUMES_PER_ORGANIZATION} volumes, the most it may have: delete one first`);
    await this.requireRoom(organizationId, body.size_mib * MIB);
    let row;
    try {
      row = await this.db.transaction().execute(async (trx) => {
        const inserted = await this.repo.withDb(trx).insert({
          id: uuidv7(),
          organization_id: organizationId,
          application_id: app.id,
          environment_id: environmentId,
          name: body.name,
          mount_path: body.mount_path,
          process_type: processType,
          size_mib: body.size_mib,
        });
        await this.publish(trx, inserted, 'volume.created', {});
        return inserted;
      });
    } catch (err) {
      if (isUniqueViolation(err, 'volumes_environment_name'))
        throw conflict(`This application environment already has a volume named '${body.name}'`);
      if (isUniqueViolation(err, 'volumes_environment_mount_path'))
        throw conflict(`Another volume of this application environment is mounted at ${body.mount_path} in ${processType}`);
      throw err;
    }
    const deploymentId = await this.redeploy(app.id, environmentId);
    return { volume: await this.view(await this.find(app.id, row.id)), deployment_id: deploymentId };
  }

  /**
   * Grows the volume: recorded now, the disk grows in the deployment this queues (stop-then-start:
   * ext4 grows unmounted). Shrinking is refused: data could lie past the new end.
   */
  async resize(userId: string, applicationId: string, volume: string, sizeMiB: number, environment?: string) {
    const app = await this.apps.authorize(userId, applicationId);
    const row = await this.find(app.id, volume, environment);
    await requireDeployAccess(this.db, userId, row.environment_id!);
    if (sizeMiB < row.size_mib)
      throw invalid('size_mib', `volumes only grow (it is ${row.size_mib} MiB): create a smaller one and copy the data instead`);
    if (sizeMiB === row.size_mib) return { volume: await this.view(row), deployment_id: null };
    await this.requireRoom(row.organization_id, (sizeMiB - row.size_mib) * MIB);
    await this.db.transaction().execute(async (trx) => {
      const updated = await this.repo.withDb(trx).update(row.id, { size_mib: sizeMiB });
      await this.publish(trx, updated, 'volume.resized', { from_mib: row.size_mib, to_mib: sizeMiB });
    });
    const deploymentId = await this.redeploy(app.id, row.environment_id!);
    return { volume: await this.view(await this.find(app.id, row.id)), deployment_id: deploymentId };
  }

  /** Deletes the volume and its data: the current release is redeployed without it, then the disk goes. */
  async remove(userId: string, applicationId: string, volume: string, environment?: string) {
    const app = await this.apps.authorize(userId, applicationId);
    const row = await this.find(app.id, volume, environment);
    await requireDeployAccess(this.db, userId, row.environment_id!);
    const view = await this.view(row);
    await this.db.transaction().execute(async (trx) => {
      await this.repo.withDb(trx).delete(row.id);
      await this.publish(trx, row, 'volume.deleted', {});
    });
    const deploymentId = await this.redeploy(app.id, row.environment_id!);
    await this.machine?.disks.remove(row.id);
    return { volume: { ...view, usage: null }, deployment_id: deploymentId };
  }

  /** By id, or by name in the environment (production when unset). */
  private async find(applicationId: string, volume: string, environment?: string): Promise<VolumeRow> {
    const rows = UUID.test(volume)
      ? (await this.repo.list(applicationId)).filter((v) => v.id === volume)
      : (await this.repo.list(applicationId, await chosenEnvironmentId(this.db, applicationId, environment))).filter(
          (v) => v.name === volume,
        );
    if (!rows[0]) throw notFound('Volume');
    return rows[0];
  }

  /** A deployment of the serving release, so its instance mounts (or lets go of) the volume; null when nothing serves. */
  async redeploy(applicationId: string, environmentId: string): Promise<string | null> {
    const current = await this.deployments.currentRelease(applicationId, environmentId);
    if (!current) return null;
    return (await this.deployments.queue(applicationId, environmentId, current.id)).deployment_id;
  }

  private async organizationOf(applicationId: string): Promise<string> {
    const row = await this.db
      .selectFrom('applications')
      .innerJoin('projects', 'projects.id', 'applications.project_id')
      .select('projects.organization_id')
      .where('applications.id', '=', applicationId)
      .executeTakeFirstOrThrow();
    return row.organization_id;
  }

  publish(db: Db, v: Selectable<VolumesTable>, event: WebhookEvent, data: Record<string, unknown>) {
    return publishWebhookEvent(db, {
      organizationId: v.organization_id,
      event,
      data: {
        volume_id: v.id,
        name: v.name,
        application_id: v.application_id,
        environment_id: v.environment_id,
        mount_path: v.mount_path,
        size_mib: v.size_mib,
        ...data,
      },
    });
  }

  async view(v: VolumeRow) {
    const usage = await this.machine?.disks.usage(v.id).catch(() => null);
    return {
      id: v.id,
      name: v.name,
      application_id: v.application_id,
      environment: v.environment,
      mount_path: v.mount_path,
      process_type: v.process_type,
      size_mib: v.size_mib,
      usage: usage ? { used_bytes: usage.usedBytes, size_bytes: usage.sizeBytes } : null,
      deploy_strategy: 'stop-then-start' as const,
      created: iso(v.created_at),
      updated: iso(v.updated_at),
    };
  }
}
