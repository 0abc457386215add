import { v7 as uuidv7 } from 'uuid';
import type { SecretBox } from '../../platform/crypto/secret-box.js';
import type { Db } from '../../platform/db/database.js';
import type { AddonKind, AddonsTable } from '../../platform/db/schema.js';
import { AppError, conflict, forbidden, invalid, isUniqueViolation, notFound } from '../../platform/errors.js';
import { iso } from '../../platform/http/schemas.js';
import { publishWebhookEvent, type WebhookEvent } from '../../platform/webhook-events.js';
import {
  ADDON_PLANS,
  findPlan,
  missingServer,
  newCredentials,
  newPassword,
  openCredentials,
  quietClient,
  redisCommands,
  sealCredentials,
  type AddonBackend,
} from '../../platform/addons/index.js';
import { boundedQuery } from '../../platform/addons/bounded-query.js';
import type { Insertable, Selectable } from 'kysely';
import type { ApplicationsService } from '../applications/index.js';
import type { OrganizationScope } from '../organizations/index.js';
import { chosenEnvironmentId, type DeploymentsService, type ReleasesService } from '../../pipeline/index.js';
import type { AddonsRepository } from './addons.repository.js';
import type { DiskRoom } from './disk-room.js';

type AddonRow = Selectable<AddonsTable>;

export interface AddonsSettings {
  portRange: { first: number; last: number };
  deleteGraceHours: number;
  /** DATA_DIR's disk, where the local runtime keeps add-ons' data (null: the cluster keeps it). */
  room?: DiskRoom | null;
}

const DEFAULT_VARIABLE: Record<AddonKind, string> = { postgres: 'DATABASE_URL', redis: 'REDIS_URL' };
const MAX_QUERY_ROWS = 1000;
/** Most bytes of values `psql` answers (the rows past it are never read from the server). */
const MAX_QUERY_BYTES = 4 * 1024 * 1024;

/**
 * Add-ons: a Postgres or Redis server per add-on, owned by an organization and attached to its
 * application environments. Attaching, detaching and rotating credentials change the attached
 * environments' configuration: each that serves gets a new release, deployed at once.
 */
export class AddonsService {
  constructor(
    private readonly db: Db,
    private readonly repo: AddonsRepository,
    private readonly secrets: SecretBox,
    private readonly scope: OrganizationScope,
    private readonly apps: ApplicationsService,
    private readonly releases: ReleasesService,
    private readonly deployments: DeploymentsService,
    /** Where the servers run (local sandboxes or a Kubernetes cluster); null where this process runs neither. */
    private readonly supervisor: AddonBackend | null,
    private readonly settings: AddonsSettings,
  ) {}

  async list(userId: string, orgSlug: string) {
    const { organization } = await this.scope.organization(userId, orgSlug);
    return this.views(await this.repo.list(organization.id));
  }

  async show(userId: string, orgSlug: string, name: string) {
    const { addon } = await this.resolve(userId, orgSlug, name);
    return (await this.views([addon]))[0]!;
  }

  /** Refuses (403) a caller who may not create add-ons in the organization (admins only), before anything is written. */
  async requireCreator(userId: string, orgSlug: string): Promise<void> {
    const { admin } = await this.scope.organization(userId, orgSlug);
    if (!admin) throw this.adminsOnly();
  }

  async create(userId: string, orgSlug: string, body: { name: string; kind: AddonKind; plan?: string | undefined }) {
    const { organization, admin } = await this.scope.organization(userId, orgSlug);
    if (!admin) throw this.adminsOnly();
    const planName = body.plan ?? 'hobby';
    this.requirePlan(body.kind, planName);
    const supervisor = this.requireSupervisor(body.kind);
    if (await this.repo.findByName(organization.id, body.name)) throw this.nameTaken(body.name);
    // A Postgres add-on starts as a copy of the template cluster (~40 MiB) and writes its first WAL segments.
    await this.settings.room?.require(`the add-on '${body.name}' was not created`, body.kind === 'postgres' ? 96 * 1024 * 1024 : 0);
    // Announced once it is made (running, or failed and kept to be read): one the disk was too full for goes unannounced.
    const row = await this.insertRow(
      {
        organization_id: organization.id,
        name: body.name,
        kind: body.kind,
        plan: planName,
        credentials_sealed: sealCredentials(this.secrets, newCredentials(body.kind)),
      },
      null,
    );
    try {
      await supervisor.provision(row);
    } catch (err) {
      // The disk filled while it was made: nothing half made is left (its files and row go), 507.
      if (this.settings.room && (await this.settings.room.explains(err))) {
        await supervisor.remove(row.id).catch(() => {});
        await this.repo.delete(row.id);
        throw this.settings.room.full(`the add-on '${body.name}' was not created`);
      }
      await this.repo.update(row.id, { status: 'failed', status_detail: (err as Error).message });
    }
    const made = (await this.repo.find(row.id))!;
    await this.publish(this.db, made, 'addon.created', { status: made.status });
    return (await this.views([made]))[0]!;
  }

  async attach(
    userId: string,
    orgSlug: string,
    name: string,
    body: { application_id: string; environment?: string | undefined; as?: string | undefined },
  ) {
    const { addon } = await this.resolveForChange(userId, orgSlug, name);
    this.requireLive(addon);
    const app = await this.apps.authorize(userId, body.application_id);
    // A member of both organizations still cannot join them: an add-on serves its own organization only.
    if ((await this.organizationOf(app.id)) !== addon.organization_id)
      throw invalid(
        'application_id',
        "the application belongs to another organization: an add-on attaches only to its own organization's applications",
      );
    const environmentId = await chosenEnvironmentId(this.db, app.id, body.environment);
    const variable = body.as ?? DEFAULT_VARIABLE[addon.kind];
    try {
      await this.db.transaction().execute(async (trx) => {
        await this.repo
          .withDb(trx)
          .insertAttachment({ id: uuidv7(), addon_id: addon.id, application_id: app.id, environment_id: environmentId, variable });
        await this.publish(trx, addon, 'addon.attached', { application_id: app.id, environment_id: environmentId, variable });
      });
    } catch (err) {
      if (isUniqueViolation(err, 'addon_attachments_addon_id_application_id_environment_id_key'))
        throw conflict(`Add-on '${addon.name}' is already attached to that application environment`);
      if (isUniqueViolation(err))
        throw conflict(`That application environment already has an add-on attached as ${variable}: choose another name with "as"`);
      throw err;
    }
    await this.supervisor?.attachmentsChanged?.(addon.id);
    return this.change(addon.id, [{ applicationId: app.id, environmentId }]);
  }

  /**
   * Moves another add-on's attachment to this one (same application environment, same variable),
   * in one transaction, then releases it: what a rollback "with the database as before release N"
   * does with the fork. Explicit only: `confirm` must be true.
   */
  async swap(userId: string, orgSlug: string, name: string, body: { attachment_id: string; confirm: boolean }) {
    const { addon } = await this.resolveForChange(userId, orgSlug, name);
    this.requireLive(addon);
    if (!body.confirm)
      throw invalid('confirm', 'a swap points the application at this add-on instead of the one it uses: send confirm: true');
    const moved = await this.db.transaction().execute(async (trx) => {
      const old = await trx
        .selectFrom('addon_attachments as t')
        .innerJoin('addons as a', 'a.id', 't.addon_id')
        .select(['t.id', 't.addon_id', 't.application_id', 't.environment_id', 't.variable', 'a.organization_id', 'a.kind', 'a.name'])
        .where('t.id', '=', body.attachment_id)
        .forUpdate()
        .executeTakeFirst();
      if (!old || old.organization_id !== addon.organization_id) throw notFound('Attachment');
      if (old.addon_id === addon.id) throw conflict(`That attachment is already '${addon.name}'s`);
      if (old.kind !== addon.kind)
        throw invalid('attachment_id', `that attachment is a ${old.kind} add-on's; '${addon.name}' is ${addon.kind}`);
      await trx.deleteFrom('addon_attachments').where('id', '=', old.id).execute();
      await this.repo.withDb(trx).insertAttachment({
        id: uuidv7(),
        addon_id: addon.id,
        application_id: old.application_id,
        environment_id: old.environment_id,
        variable: old.variable,
      });
      const data = { application_id: old.application_id, environment_id: old.environment_id, variable: old.variable };
      await this.publish(trx, { ...addon, id: old.addon_id, name: old.name } as AddonRow, 'addon.detached', data);
      await this.publish(trx, addon, 'addon.attached', { ...data, replaces: old.name });
      return old;
    });
    await this.supervisor?.attachmentsChanged?.(addon.id);
    await this.supervisor?.attachmentsChanged?.(moved.addon_id);
    return this.change(addon.id, [{ applicationId: moved.application_id, environmentId: moved.environment_id }]);
  }

  async detach(userId: string, orgSlug: string, name: string, attachmentId: string) {
    const { addon } = await this.resolveForChange(userId, orgSlug, name);
    const removed = await this.db.transaction().execute(async (trx) => {
      const gone = await this.repo.withDb(trx).deleteAttachment(addon.id, attachmentId);
      if (gone)
        await this.publish(trx, addon, 'addon.detached', {
          application_id: gone.application_id,
          environment_id: gone.environment_id,
          variable: gone.variable,
        });
      return gone;
    });
    if (!removed) throw notFound('Attachment');
    await this.supervisor?.attachmentsChanged?.(addon.id);
    return this.change(addon.id, [{ applicationId: removed.application_id, environmentId: removed.environment_id }]);
  }

  async resize(userId: string, orgSlug: string, name: string, plan: string) {
    const { addon } = await this.resolveForChange(userId, orgSlug, name);
    this.requireLive(addon);
    this.requirePlan(addon.kind, plan);
    const supervisor = this.requireSupervisor(addon.kind);
    if (plan === addon.plan) return (await this.views([addon]))[0]!;
    const updated = await this.db.transaction().execute(async (trx) => {
      const row = await this.repo.withDb(trx).update(addon.id, { plan });
      await this.publish(trx, row, 'addon.resized', { from: addon.plan, to: plan });
      return row;
    });
    // The new limits apply from a restart: the control group and the server's settings are made at start.
    await supervisor.restart(updated).catch((err: Error) => this.repo.update(addon.id, { status: 'failed', status_detail: err.message }));
    return (await this.views([(await this.repo.find(addon.id))!]))[0]!;
  }

  async remove(userId: string, orgSlug: string, name: string) {
    const { addon } = await this.resolveForChange(userId, orgSlug, name);
    this.requireLive(addon);
    const attached = await this.repo.attachments([addon.id]);
    if (attached.length > 0)
      throw conflict(
        `Add-on '${addon.name}' is attached to ${attached.map((a) => `${a.application} (${a.environment})`).join(', ')}: detach it first`,
      );
    return this.softDelete(addon);
  }

  /**
   * `DELETE /applications/{id}?with_addons=true`, before the application goes: the live add-ons
   * attached to it, each checked deletable once it is gone (the caller an admin of the
   * organization; no attachment to another application). Otherwise refused whole, so nothing is
   * deleted: neither the application nor any add-on.
   */
  async addonsToDeleteWith(userId: string, applicationId: string): Promise<AddonRow[]> {
    await this.apps.authorize(userId, applicationId);
    const addons = await this.db
      .selectFrom('addons')
      .selectAll()
      .where('deleted_at', 'is', null)
      .where('id', 'in', (q) => q.selectFrom('addon_attachments').select('addon_id').where('application_id', '=', applicationId))
      .orderBy('name')
      .execute();
    if (addons.length === 0) return [];
    await this.scope.requireAdmin(userId, addons[0]!.organization_id);
    const elsewhere = (await this.repo.attachments(addons.map((a) => a.id))).filter((a) => a.application_id !== applicationId);
    if (elsewhere.length > 0) {
      const name = addons.find((a) => a.id === elsewhere[0]!.addon_id)!.name;
      throw conflict(
        `Add-on '${name}' is also attached to ${elsewhere[0]!.application} (${elsewhere[0]!.environment}): detach it there first, ` +
          'or delete the application without its add-ons (they then stay in the organization)',
      );
    }
    return addons;
  }

  /** After their application was deleted (and its attachments with it): each add-on deleted as `DELETE …/addons/{name}` does. */
  async deleteWithApplication(addons: AddonRow[]) {
    for (const addon of addons) {
      // Attached again meanwhile (another application): kept, as a delete of it would refuse.
      if ((await this.repo.attachments([addon.id])).length > 0) continue;
      await this.softDelete(addon);
    }
  }

  /** Deleted, within the grace period (undeletable until `purge_after`): its server stopped, `addon.deleted` sent. */
  private async softDelete(addon: AddonRow) {
    const purgeAfter = new Date(Date.now() + this.settings.deleteGraceHours * 3600_000);
    const row = await this.db.transaction().execute(async (trx) => {
      const updated = await this.repo.withDb(trx).update(addon.id, { status: 'deleted', deleted_at: new Date(), purge_after: purgeAfter });
      await this.publish(trx, updated, 'addon.deleted', { purge_after: purgeAfter.toISOString() });
      return updated;
    });
    await this.supervisor?.stop(addon.id);
    return (await this.views([row]))[0]!;
  }

  async undelete(userId: string, orgSlug: string, name: string) {
    const { addon } = await this.resolveForChange(userId, orgSlug, name);
    if (!addon.deleted_at) throw conflict(`Add-on '${addon.name}' is not deleted`);
    const supervisor = this.requireSupervisor(addon.kind);
    const row = await this.db.transaction().execute(async (trx) => {
      const updated = await this.repo.withDb(trx).update(addon.id, { status: 'creating', deleted_at: null, purge_after: null });
      await this.publish(trx, updated, 'addon.undeleted', {});
      return updated;
    });
    await supervisor.provision(row).catch((err: Error) => this.repo.update(addon.id, { status: 'failed', status_detail: err.message }));
    return (await this.views([(await this.repo.find(addon.id))!]))[0]!;
  }

  /** New password for the attached applications: set on the server first, then released to each attachment. */
  async rotate(userId: string, orgSlug: string, name: string) {
    const { addon } = await this.resolveForChange(userId, orgSlug, name);
    this.requireLive(addon);
    const supervisor = this.requireSupervisor(addon.kind);
    const previous = openCredentials(this.secrets, addon.credentials_sealed);
    const next = { ...previous, password: newPassword() };
    await supervisor.rotate(addon, previous, next);
    await this.db.transaction().execute(async (trx) => {
      const updated = await this.repo.withDb(trx).update(addon.id, { credentials_sealed: sealCredentials(this.secrets, next) });
      await this.publish(trx, updated, 'addon.credentials_rotated', {});
    });
    const attached = await this.repo.attachments([addon.id]);
    return this.change(
      addon.id,
      attached.map((a) => ({ applicationId: a.application_id, environmentId: a.environment_id })),
    );
  }

  /** `slipway addons psql`: one SQL text run as the attached applications' user, at most 1000 rows back. */
  async query(userId: string, orgSlug: string, name: string, text: string) {
    const { addon } = await this.resolveForChange(userId, orgSlug, name);
    this.requireLive(addon);
    if (addon.kind !== 'postgres')
      throw new AppError('VALIDATION', `Add-on '${addon.name}' is ${addon.kind}: only a postgres add-on takes SQL`);
    this.requireReachableHere(addon);
    const c = openCredentials(this.secrets, addon.credentials_sealed);
    let client: ReturnType<typeof quietClient>;
    try {
      client = quietClient({
        host: '127.0.0.1',
        port: addon.port,
        user: c.user,
        password: c.password,
        database: c.database,
        connectionTimeoutMillis: 5000,
        statement_timeout: 30_000,
      });
      await client.connect();
    } catch {
      throw conflict(`Add-on '${addon.name}' does not accept connections now (status ${addon.status})`);
    }
    try {
      const result = await boundedQuery(client, text, { maxRows: MAX_QUERY_ROWS, maxBytes: MAX_QUERY_BYTES });
      return {
        command: result.command,
        row_count: result.rowCount,
        columns: result.columns,
        rows: result.rows,
        truncated: result.truncated,
      };
    } catch (err) {
      // The server's own words (a syntax error, a missing table): the caller's SQL, never a secret of ours.
      throw new AppError('VALIDATION', `SQL failed: ${(err as Error).message}`);
    } finally {
      await client.end().catch(() => {});
    }
  }

  /**
   * The add-on of `kind` attached to an application environment (the one under the default
   * variable first), with what reaching it takes but no password: Ancla's `cache` and `database`.
   * The caller has checked the environment and application are the member's.
   */
  async attachedConnection(applicationId: string, environmentId: string, kind: AddonKind) {
    const [addon] = await this.repo.attachedTo(applicationId, environmentId, kind, DEFAULT_VARIABLE[kind]);
    if (!addon) return null;
    const c = openCredentials(this.secrets, addon.credentials_sealed);
    return {
      addon: addon.name,
      variable: addon.variable,
      status: addon.status,
      host: addon.host ?? '127.0.0.1',
      port: addon.port,
      user: c.user,
      database: c.database ?? null,
    };
  }

  /**
   * Empties a Redis add-on (FLUSHALL through the platform's own connection: the password never
   * leaves the server). A change to the organization's data, so its admins' only.
   */
  async flush(userId: string, orgSlug: string, name: string) {
    const { addon } = await this.resolveForChange(userId, orgSlug, name);
    this.requireLive(addon);
    if (addon.kind !== 'redis') throw new AppError('VALIDATION', `Add-on '${addon.name}' is ${addon.kind}: only a redis add-on is flushed`);
    this.requireReachableHere(addon);
    const reply = await redisCommands(addon.port, openCredentials(this.secrets, addon.credentials_sealed), [['FLUSHALL']]).catch(
      () => null,
    );
    if (reply?.[0] !== 'OK') throw conflict(`Add-on '${addon.name}' does not accept connections now (status ${addon.status})`);
    return { addon: addon.name, flushed: true };
  }

  /** Removes add-ons whose grace period has passed: their server's data, then their row. */
  async purgeExpired(): Promise<number> {
    const due = await this.repo.purgeable(new Date());
    for (const { id } of due) {
      await this.supervisor?.remove(id);
      await this.repo.delete(id);
    }
    return due.length;
  }

  /** A new add-on's row (a free port; a name clash is 409), with its `addon.created` event unless `event` is null (sent later). */
  private async insertRow(
    values: Omit<Insertable<AddonsTable>, 'id' | 'port'>,
    event: Record<string, unknown> | null = {},
  ): Promise<AddonRow> {
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        return await this.db.transaction().execute(async (trx) => {
          const inserted = await this.repo.withDb(trx).insert({ ...values, id: uuidv7(), port: await this.freePort() });
          if (event) await this.publish(trx, inserted, 'addon.created', event);
          return inserted;
        });
      } catch (err) {
        if (isUniqueViolation(err, 'addons_organization_name')) throw this.nameTaken(values.name);
        if (!isUniqueViolation(err)) throw err; // another add-on took the port meanwhile: try the next one
      }
    }
    throw conflict('No free add-on port (ADDONS_PORT_RANGE) after several tries; retry');
  }

  /**
   * The record of a fork being restored from `source` (same kind and plan; status `creating` until
   * its server has replayed to the target). It starts with the source's credentials, which its
   * restored data holds; the restore gives it its own before it is marked running.
   */
  async insertFork(source: AddonRow, name: string, restoredFrom: string): Promise<AddonRow> {
    this.requireSupervisor(source.kind);
    if (await this.repo.findByName(source.organization_id, name)) throw this.nameTaken(name);
    return this.insertRow(
      {
        organization_id: source.organization_id,
        name,
        kind: source.kind,
        plan: source.plan,
        credentials_sealed: sealCredentials(this.secrets, openCredentials(this.secrets, source.credentials_sealed)),
        status_detail: 'restoring: queued',
        restored_from: restoredFrom,
      },
      { restored_from: restoredFrom },
    );
  }

  async viewOf(id: string) {
    return (await this.views([(await this.repo.find(id))!]))[0]!;
  }

  /** For the add-on's other services (backups): members read, admins change. */
  resolveForRead(userId: string, orgSlug: string, name: string) {
    return this.resolve(userId, orgSlug, name);
  }

  resolveForAdmin(userId: string, orgSlug: string, name: string) {
    return this.resolveForChange(userId, orgSlug, name);
  }

  // --- helpers ---

  /** Add-ons are the organization's: reading them is for members, every change (and SQL) for its admins. */
  private async resolveForChange(userId: string, orgSlug: string, name: string) {
    const found = await this.resolve(userId, orgSlug, name);
    if (!found.admin) throw this.adminsOnly();
    return found;
  }

  private adminsOnly() {
    return forbidden("Only the organization's admins can change add-ons or run SQL on them");
  }

  private async resolve(userId: string, orgSlug: string, name: string) {
    const { organization, admin } = await this.scope.organization(userId, orgSlug);
    const addon = await this.repo.findByName(organization.id, name);
    if (!addon) throw notFound('Add-on');
    return { addon, organization, admin };
  }

  private requireLive(addon: AddonRow) {
    if (addon.deleted_at)
      throw conflict(`Add-on '${addon.name}' is deleted: undelete it first (possible until ${iso(addon.purge_after!)})`);
  }

  /** The platform reaches a server on its own loopback only: a cluster's add-on is behind its NetworkPolicy. */
  private requireReachableHere(addon: AddonRow) {
    if (addon.host)
      throw conflict(
        `Add-on '${addon.name}' runs in the Kubernetes cluster, reachable from its attached applications only: use \`slipway exec\` in one of them`,
      );
  }

  private requirePlan(kind: AddonKind, plan: string) {
    if (!findPlan(kind, plan))
      throw new AppError(
        'VALIDATION',
        `plan: no ${kind} plan named '${plan}' (plans: ${ADDON_PLANS[kind].map((p) => p.name).join(', ')})`,
        [{ field: 'plan', message: 'unknown plan' }],
      );
  }

  private requireSupervisor(kind: AddonKind): AddonBackend {
    // A cluster runs the servers from images: only the local supervisor needs the binaries here.
    const missing = this.supervisor?.runs === 'kubernetes' ? null : missingServer(kind);
    if (missing) throw conflict(`Add-ons of kind ${kind} cannot run here: ${missing}`);
    if (!this.supervisor)
      throw conflict(
        'Add-ons run on the local runtime with its sandbox (RUNTIME=local, RUNTIME_ISOLATION=sandbox) in a process of role all, or on RUNTIME=kubernetes',
      );
    return this.supervisor;
  }

  private nameTaken(name: string) {
    return conflict(`An add-on named '${name}' already exists in this organization (a deleted one keeps its name until purged)`);
  }

  private async organizationOf(applicationId: string): Promise<string | undefined> {
    const row = await this.db
      .selectFrom('applications')
      .innerJoin('projects', 'projects.id', 'applications.project_id')
      .select('projects.organization_id')
      .where('applications.id', '=', applicationId)
      .executeTakeFirst();
    return row?.organization_id;
  }

  private async freePort(): Promise<number> {
    const used = await this.repo.usedPorts();
    for (let port = this.settings.portRange.first; port <= this.settings.portRange.last; port++) if (!used.has(port)) return port;
    throw conflict('Every add-on port (ADDONS_PORT_RANGE) is taken');
  }

  private publish(db: Db, addon: AddonRow, event: WebhookEvent, data: Record<string, unknown>) {
    return publishWebhookEvent(db, {
      organizationId: addon.organization_id,
      event,
      data: { addon_id: addon.id, name: addon.name, kind: addon.kind, plan: addon.plan, ...data },
    });
  }

  /** The new releases of the changed application environments that serve (each queued for deployment). */
  private async change(addonId: string, targets: Array<{ applicationId: string; environmentId: string }>) {
    const releases = [];
    for (const { applicationId, environmentId } of targets) {
      if (!(await this.deployments.currentRelease(applicationId, environmentId))) continue;
      // On the image serving (a swap after a rollback must not bring the newer code back).
      const release = await this.releases.createRelease(
        applicationId,
        environmentId,
        await this.deployments.servingImage(applicationId, environmentId),
      );
      const frozen = await this.releases.runRelease(release.id);
      if (!frozen.ok) continue;
      const deployment = await this.deployments.queue(applicationId, environmentId, release.id);
      const env = await this.db.selectFrom('environments').select('slug').where('id', '=', environmentId).executeTakeFirstOrThrow();
      releases.push({
        application_id: applicationId,
        environment: env.slug,
        release_id: release.id,
        version: release.version,
        deployment_id: deployment.deployment_id,
      });
    }
    return { addon: (await this.views([(await this.repo.find(addonId))!]))[0]!, releases };
  }

  private async views(rows: AddonRow[]) {
    const attachments = await this.repo.attachments(rows.map((r) => r.id));
    return rows.map((r) => {
      const plan = findPlan(r.kind, r.plan);
      return {
        id: r.id,
        name: r.name,
        kind: r.kind,
        plan: r.plan,
        status: r.status,
        status_detail: r.status_detail,
        limits: { memory_mib: plan?.memoryMiB ?? 0, cpu_millicores: plan?.cpuMillicores ?? 0, connections: plan?.connections ?? 0 },
        attachments: attachments
          .filter((a) => a.addon_id === r.id)
          .map((a) => ({
            id: a.id,
            application_id: a.application_id,
            application: a.application,
            environment: a.environment,
            variable: a.variable,
            created: iso(a.created_at),
          })),
        deleted_at: r.deleted_at ? iso(r.deleted_at) : null,
        purge_after: r.purge_after ? iso(r.purge_after) : null,
        restored_from: r.restored_from,
        last_proven_restorable_at: r.last_proven_restorable_at ? iso(r.last_proven_restorable_at) : null,
        drill_check_query: r.drill_check_query,
        created: iso(r.created_at),
      };
    });
  }
}
