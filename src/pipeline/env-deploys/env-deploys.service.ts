import { v7 as uuidv7 } from 'uuid';
import type { Db } from '../../platform/db/database.js';
import { AppError, conflict, invalid, notFound } from '../../platform/errors.js';
import { iso, pageOf, type PaginationQuery } from '../../platform/http/schemas.js';
import { OrganizationScope } from '../../modules/organizations/index.js';
import { EnvDeploysRepository, type EnvDeployRow, type EnvDeployServiceRow } from './env-deploys.repository.js';
import type { EnvDeployServiceState } from '../stages.js';

/**
 * How an environment deploy starts each service's pipeline run; implemented over the
 * pipeline modules (images, releases, deployments) in `service-pipeline.ts`.
 */
export interface ServicePipeline {
  /** False when this process runs no pipeline (the request then answers 503). */
  available(): boolean;
  /** Starts build → release → deploy of a service into an environment; the image record id. */
  deploy(applicationId: string, environmentId: string, ref: string | null): Promise<{ imageId: string }>;
  /**
   * Releases an existing release's image into another environment and deploys it, with the
   * source's frozen configuration (`source`) or the target environment's own (`target`).
   */
  promote(
    sourceReleaseId: string,
    environmentId: string,
    configuration: 'source' | 'target',
  ): Promise<{ imageId: string | null; releaseId: string; deploymentId: string }>;
  /** The release serving a service in an environment (its latest complete deployment's), if any. */
  currentRelease(applicationId: string, environmentId: string): Promise<{ id: string; version: number } | null>;
}

type ServiceStatus = EnvDeployServiceState;

/** Where one service's pipeline run stands, from its records. */
function serviceState(s: EnvDeployServiceRow): { status: ServiceStatus; error_detail: string | null } {
  if (s.error_detail) return { status: 'error', error_detail: s.error_detail };
  if (s.deployment_status) {
    if (s.deployment_status === 'complete') return { status: 'complete', error_detail: null };
    if (s.deployment_status === 'error')
      return { status: 'error', error_detail: `deployment failed: ${s.deployment_error ?? 'unknown error'}` };
    return { status: 'deploying', error_detail: null };
  }
  if (s.release_status === 'error')
    return { status: 'error', error_detail: `release v${s.release_version} failed: ${s.release_error ?? 'unknown error'}` };
  if (s.release_id) return { status: s.release_status === 'built' ? 'deploying' : 'releasing', error_detail: null };
  if (s.image_status === 'error')
    return { status: 'error', error_detail: `build v${s.image_version} failed: ${s.image_error ?? 'unknown error'}` };
  if (s.image_status === 'built') return { status: 'releasing', error_detail: null };
  if (s.image_id) return { status: 'building', error_detail: null };
  return { status: 'queued', error_detail: null };
}

/** A message safe to store and show: our own errors' messages, nothing from unexpected ones. */
const reason = (err: unknown) => (err instanceof AppError ? err.message : 'could not start its pipeline (internal error)');

/**
 * Environment deploys: one pipeline run per service of an environment (or one service),
 * tracked together. The record is complete when every service's deployment is complete and
 * fails as soon as any service's build, release or deployment fails, naming it. Progress is
 * read from the pipeline's own records, so nothing has to report back to this module.
 */
export class EnvDeploysService {
  private readonly repo: EnvDeploysRepository;
  readonly scope: OrganizationScope;

  /** `logger` records the unexpected errors that a record shows only as "internal error". */
  constructor(
    private readonly db: Db,
    repo: EnvDeploysRepository,
    private readonly pipeline: ServicePipeline,
    scope: OrganizationScope,
    private readonly logger?: { error(obj: object, msg: string): void },
  ) {
    this.repo = repo;
    this.scope = scope;
  }

  /** The target environment, once the caller may deploy into it (protected: workspace admins only). */
  private async target(userId: string, ws: string, projectSlug: string, envSlug: string) {
    const scope = await this.scope.environment(userId, ws, projectSlug, envSlug);
    if (scope.environment.protected && !scope.admin) {
      throw new AppError('FORBIDDEN', `Environment '${envSlug}' is protected: only workspace admins deploy to it`);
    }
    if (!this.pipeline.available()) throw new AppError('UNAVAILABLE', 'The pipeline is not running in this process');
    return scope;
  }

  private async services(projectId: string, serviceSlug: string | undefined) {
    if (serviceSlug !== undefined) return [await this.scope.application(projectId, serviceSlug)];
    const all = await this.db.selectFrom('applications').selectAll().where('project_id', '=', projectId).orderBy('slug').execute();
    if (all.length === 0) throw conflict('The project has no services to deploy');
    return all;
  }

  private setService(
    deployId: string,
    applicationId: string,
    changes: { image_id?: string | null; release_id?: string; deployment_id?: string; error_detail?: string },
  ) {
    return this.db
      .updateTable('environment_deploy_services')
      .set(changes)
      .where('environment_deploy_id', '=', deployId)
      .where('application_id', '=', applicationId)
      .execute();
  }

  /** Builds, releases and deploys every service (or one) from `ref`, else the environment's branch. */
  async deploy(userId: string, ws: string, projectSlug: string, envSlug: string, serviceSlug?: string, ref?: string) {
    const { project, environment } = await this.target(userId, ws, projectSlug, envSlug);
    const services = await this.services(project.id, serviceSlug);
    const id = uuidv7();
    await this.repo.insert(
      { id, environment_id: environment.id, kind: 'deploy', source_environment_id: null, requested_by: userId },
      services.map((s) => ({ application_id: s.id })),
    );
    for (const s of services) {
      try {
        const { imageId } = await this.pipeline.deploy(s.id, environment.id, ref ?? environment.auto_deploy_branch);
        await this.setService(id, s.id, { image_id: imageId });
      } catch (err) {
        if (!(err instanceof AppError)) this.logger?.error({ err, applicationId: s.id }, 'could not start an environment deploy');
        await this.setService(id, s.id, { error_detail: reason(err) });
      }
    }
    return this.show(id);
  }

  /**
   * Promotion: deploys into this environment the exact release (same image, same frozen
   * configuration) that serves each service in `from`, without rebuilding.
   */
  async promote(
    userId: string,
    ws: string,
    projectSlug: string,
    envSlug: string,
    input: { from: string; service?: string; configuration?: 'source' | 'target' },
  ) {
    const { project, environment } = await this.target(userId, ws, projectSlug, envSlug);
    if (input.from === envSlug) throw invalid('from', 'must name another environment than the target');
    const source = await this.db
      .selectFrom('environments')
      .selectAll()
      .where('project_id', '=', project.id)
      .where('slug', '=', input.from)
      .executeTakeFirst();
    if (!source) throw notFound(`Environment '${input.from}'`);
    const candidates = await this.services(project.id, input.service);
    const plan: Array<{ applicationId: string; releaseId: string }> = [];
    for (const s of candidates) {
      const release = await this.pipeline.currentRelease(s.id, source.id);
      if (release) plan.push({ applicationId: s.id, releaseId: release.id });
      else if (input.service !== undefined) throw conflict(`Service '${s.slug}' has no deployed release in '${source.slug}' to promote`);
    }
    if (plan.length === 0) throw conflict(`No service of ${project.slug} has a deployed release in '${source.slug}' to promote`);
    const id = uuidv7();
    await this.repo.insert(
      { id, environment_id: environment.id, kind: 'promote', source_environment_id: source.id, requested_by: userId },
      plan.map((p) => ({ application_id: p.applicationId })),
    );
    for (const p of plan) {
      try {
        const r = await this.pipeline.promote(p.releaseId, environment.id, input.configuration ?? 'source');
        await this.setService(id, p.applicationId, { image_id: r.imageId, release_id: r.releaseId, deployment_id: r.deploymentId });
      } catch (err) {
        if (!(err instanceof AppError)) this.logger?.error({ err, applicationId: p.applicationId }, 'could not start a promotion');
        await this.setService(id, p.applicationId, { error_detail: reason(err) });
      }
    }
    return this.show(id);
  }

  /** Brings a record's progress up to date from the pipeline records; settles it when it is over. */
  private async refresh(row: EnvDeployRow) {
    // Linking goes on after the record settled: the other services' runs stay visible to the end.
    await this.repo.linkRecords(row.id);
    const services = await this.repo.services([row.id]);
    const states = services.map((s) => ({ s, ...serviceState(s) }));
    if (row.status === 'deploying') {
      const failed = states.filter((x) => x.status === 'error');
      if (failed.length > 0) {
        const detail = failed.map((x) => `service '${x.s.service}' failed: ${x.error_detail}`).join('; ');
        await this.repo.settle(row.id, { status: 'error', error_detail: detail });
        row = (await this.repo.findById(row.id))!;
      } else if (states.every((x) => x.status === 'complete')) {
        await this.repo.settle(row.id, { status: 'complete', error_detail: null });
        row = (await this.repo.findById(row.id))!;
      }
    }
    return { row, states };
  }

  private async view(row: EnvDeployRow) {
    const { row: current, states } = await this.refresh(row);
    return {
      id: current.id,
      environment: current.environment_slug,
      kind: current.kind,
      from: current.source_slug ?? null,
      services: states.map(({ s, status, error_detail }) => ({
        service: s.service,
        deployment_id: s.deployment_id,
        image_id: s.image_id,
        release_id: s.release_id,
        // The pipeline job running the service's build → release → deploy (a promotion runs none of its own).
        job_id: s.image_job_id,
        status,
        error_detail,
      })),
      // One job per service runs it: the first service's stands for the whole (Ancla's clients read one).
      job_id: states.find(({ s }) => s.image_job_id !== null)?.s.image_job_id ?? null,
      status: current.status,
      complete: current.complete,
      error: current.error,
      error_detail: current.error_detail,
      created: iso(current.created_at),
      updated: iso(current.updated_at),
    };
  }

  private async show(id: string) {
    return this.view((await this.repo.findById(id))!);
  }

  async list(userId: string, ws: string, projectSlug: string, envSlug: string, query: PaginationQuery) {
    const { environment } = await this.scope.environment(userId, ws, projectSlug, envSlug);
    const { offset, per_page } = pageOf(query, 0);
    const rows = await this.repo.page(environment.id, per_page, offset);
    return Promise.all(rows.map((r) => this.view(r)));
  }

  private async find(userId: string, ws: string, projectSlug: string, envSlug: string, deployId: string) {
    const { environment } = await this.scope.environment(userId, ws, projectSlug, envSlug);
    const row = await this.repo.find(environment.id, deployId);
    if (!row) throw notFound('Environment deploy');
    return row;
  }

  async detail(userId: string, ws: string, projectSlug: string, envSlug: string, deployId: string) {
    return this.view(await this.find(userId, ws, projectSlug, envSlug, deployId));
  }

  /** One log for the whole deploy: each service's build, release and deployment logs, lines prefixed with the service. */
  async log(userId: string, ws: string, projectSlug: string, envSlug: string, deployId: string) {
    const { row } = await this.refresh(await this.find(userId, ws, projectSlug, envSlug, deployId));
    const services = await this.repo.services([row.id]);
    const lines: string[] = [];
    for (const s of services) {
      const state = serviceState(s);
      lines.push(`${s.service} | ===== ${s.service}: ${state.status}${state.error_detail ? ` (${state.error_detail})` : ''}`);
      const sections: Array<[string, string | null]> = [
        [`build v${s.image_version ?? '?'}`, row.kind === 'deploy' ? s.image_log : null],
        [`release v${s.release_version ?? '?'}`, s.release_log],
        ['deployment', s.deployment_log],
      ];
      for (const [title, text] of sections) {
        if (!text) continue;
        lines.push(`${s.service} | ----- ${title}`);
        for (const line of text.replace(/\n$/, '').split('\n')) lines.push(`${s.service} | ${line}`);
      }
    }
    return {
      status: row.status,
      log_text: lines.join('\n') + (lines.length ? '\n' : ''),
      error: row.error,
      error_detail: row.error_detail,
    };
  }
}
