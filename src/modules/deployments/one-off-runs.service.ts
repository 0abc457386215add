import { v7 as uuidv7 } from 'uuid';
import type { AppContext } from '../../platform/context.js';
import type { OneOffRunsTable } from '../../platform/db/schema.js';
import type { Selectable } from 'kysely';
import { conflict, notFound } from '../../platform/errors.js';
import { iso, isoOrNull, paginate, type PaginationQuery } from '../../platform/http/schemas.js';
import { requireJobRoom } from '../../platform/jobs/require-jobs.js';
import type { ApplicationsService } from '../applications/index.js';
import { requireDeployAccess } from '../../platform/access/environment-protection.js';
import { DeploymentsRepository } from './deployments.repository.js';
import { chosenEnvironmentId } from './environment-choice.js';
import { OneOffRunsRepository } from './one-off-runs.repository.js';

export const RUN_JOB = 'run';
export const DEFAULT_RUN_TIMEOUT_SECONDS = 600;

type RunRow = Selectable<OneOffRunsTable>;

export function runView(r: RunRow) {
  return {
    id: r.id,
    application_id: r.application_id,
    environment_id: r.environment_id,
    release_id: r.release_id,
    command: r.command,
    process_type: r.process_type,
    status: r.status,
    exit_code: r.exit_code,
    timeout_seconds: r.timeout_seconds,
    error_detail: r.error_detail,
    started_at: isoOrNull(r.started_at),
    finished_at: isoOrNull(r.finished_at),
    created_at: iso(r.created_at),
  };
}

/** The API side of one-off runs: queue one in the serving release, list, show, log. */
export class OneOffRunsService {
  readonly repo: OneOffRunsRepository;
  private readonly deployments: DeploymentsRepository;

  constructor(
    private readonly ctx: AppContext,
    private readonly apps: ApplicationsService,
  ) {
    this.repo = new OneOffRunsRepository(ctx.db);
    this.deployments = new DeploymentsRepository(ctx.db);
  }

  async create(
    userId: string,
    applicationId: string,
    body: { command: string; process_type?: string; environment?: string; timeout_seconds?: number },
  ) {
    await this.apps.authorize(userId, applicationId);
    const environmentId = await chosenEnvironmentId(this.ctx.db, applicationId, body.environment);
    await requireDeployAccess(this.ctx.db, userId, environmentId);
    const jobs = await requireJobRoom(this.ctx, applicationId);
    const serving = await this.deployments.current(applicationId, environmentId);
    if (!serving) throw conflict('Nothing is deployed in that environment yet: a run uses the serving release');
    const release = await this.deployments.release(serving.release_id);
    const processes = release?.processes ?? {};
    const processType = body.process_type ?? ('web' in processes ? 'web' : (Object.keys(processes)[0] ?? 'web'));
    const run = await this.repo.insert({
      id: uuidv7(),
      application_id: applicationId,
      environment_id: environmentId,
      release_id: serving.release_id,
      command: body.command,
      process_type: processType,
      timeout_seconds: body.timeout_seconds ?? DEFAULT_RUN_TIMEOUT_SECONDS,
      requested_by: userId,
    });
    const jobId = await jobs.enqueue(RUN_JOB, { applicationId, environmentId, recordId: run.id });
    await this.repo.update(run.id, { job_id: jobId });
    return runView({ ...run, job_id: jobId });
  }

  async list(userId: string, applicationId: string, query: PaginationQuery) {
    await this.apps.authorize(userId, applicationId);
    return paginate(
      query,
      async (limit, offset) => ({
        total: await this.repo.count(applicationId),
        rows: await this.repo.page(applicationId, limit, offset),
      }),
      runView,
    );
  }

  private async visible(userId: string, runId: string) {
    const run = await this.repo.find(runId);
    if (!run) throw notFound('Run');
    await this.apps.authorize(userId, run.application_id);
    return run;
  }

  async detail(userId: string, runId: string) {
    return runView(await this.visible(userId, runId));
  }

  async log(userId: string, runId: string) {
    const r = await this.visible(userId, runId);
    return {
      status: r.status,
      log_text: r.log_text,
      error: r.status === 'failed' || r.status === 'timed_out',
      error_detail: r.error_detail,
      exit_code: r.exit_code,
      deploy_step: null,
    };
  }
}
