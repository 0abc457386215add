import { v7 as uuidv7 } from 'uuid';
import type { AppContext } from '../../platform/context.js';
import type { OneOffRunsTable } from '../../platform/db/schema.js';
import type { Selectable } from 'kysely';
import { conflict, notFound } from '../../platform/errors.js';
import { iso, isoOrNull, paginate, type PaginationQuery } from '../../platform/http/schemas.js';
import { requireJobRoom, requireJobs } from '../../platform/jobs/require-jobs.js';
import type { ApplicationsService } from '../../modules/applications/index.js';
import { requireDeployAccess } from '../../platform/access/environment-protection.js';
import type { DeploymentsRepository } from '../deploy/deployments.repository.js';
import { chosenEnvironmentId } from '../deploy/environment-choice.js';
import type { OneOffRunsRepository } from './one-off-runs.repository.js';
import { RUN_JOB } from '../stages.js';
import { AttachedRuns } from './attached-runs.js';

export { RUN_JOB } from '../stages.js';
export const DEFAULT_RUN_TIMEOUT_SECONDS = 600;
/** A scheduled run still without a job this long after it was recorded was never queued. */
const UNQUEUED_AFTER_MS = 60_000;

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
    error_code: r.error_code,
    cron_entry_id: r.cron_entry_id,
    scheduled_for: isoOrNull(r.scheduled_for),
    started_at: isoOrNull(r.started_at),
    finished_at: isoOrNull(r.finished_at),
    created_at: iso(r.created_at),
  };
}

/** The API side of one-off runs: queue one in the serving release, list, show, log. */
export class OneOffRunsService {
  /** Runs attached to the caller's connection (standard input, a terminal) instead of queued. */
  readonly attached: AttachedRuns;

  constructor(
    private readonly ctx: AppContext,
    readonly repo: OneOffRunsRepository,
    private readonly deployments: DeploymentsRepository,
    private readonly apps: ApplicationsService,
  ) {
    this.attached = new AttachedRuns(ctx, repo, deployments, apps);
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

  /**
   * Queues the run of one occurrence of a cron entry in the serving release (no user asked:
   * the schedule did). Skipped, with the reason, when nothing is deployed, the entry's
   * previous run has not finished (one at a time per entry) or the occurrence already has
   * its run (another process took it).
   */
  async createScheduled(entry: {
    id: string;
    application_id: string;
    environment_id: string;
    command: string;
    process_type: string | null;
    timeout_seconds: number;
    scheduled_for: Date;
  }): Promise<{ run: ReturnType<typeof runView> } | { skipped: string }> {
    const jobs = requireJobs(this.ctx);
    const previous = await this.repo.unfinishedOfCron(entry.id);
    // A run recorded but never queued (its process stopped in between) would hold the entry forever.
    if (previous && previous.status === 'pending' && !previous.job_id && Date.now() - previous.created_at.getTime() > UNQUEUED_AFTER_MS) {
      await this.repo.failIfUnfinished(previous.id, 'Never queued: the platform stopped before it could', 'interrupted');
    } else if (previous) {
      return { skipped: `the previous run ${previous.id} has not finished` };
    }
    const serving = await this.deployments.current(entry.application_id, entry.environment_id);
    if (!serving) return { skipped: 'nothing is deployed in the environment' };
    const release = await this.deployments.release(serving.release_id);
    const processes = release?.processes ?? {};
    const processType = entry.process_type ?? ('web' in processes ? 'web' : (Object.keys(processes)[0] ?? 'web'));
    await jobs.ensureRoom(entry.application_id);
    const run = await this.repo.insertScheduled({
      id: uuidv7(),
      application_id: entry.application_id,
      environment_id: entry.environment_id,
      release_id: serving.release_id,
      command: entry.command,
      process_type: processType,
      timeout_seconds: entry.timeout_seconds,
      cron_entry_id: entry.id,
      scheduled_for: entry.scheduled_for,
    });
    if (!run) return { skipped: 'the occurrence already has its run' };
    try {
      const jobId = await jobs.enqueue(RUN_JOB, {
        applicationId: entry.application_id,
        environmentId: entry.environment_id,
        recordId: run.id,
      });
      await this.repo.update(run.id, { job_id: jobId });
      return { run: runView({ ...run, job_id: jobId }) };
    } catch (err) {
      await this.repo.failIfUnfinished(
        run.id,
        `Could not be queued: ${err instanceof Error ? err.message : String(err)}`,
        'internal_error',
      );
      throw err;
    }
  }

  /** A cron entry's runs, newest first (the caller checked access to its application). */
  cronRuns(cronEntryId: string, query: PaginationQuery) {
    return paginate(
      query,
      async (limit, offset) => ({
        total: await this.repo.count({ cronEntryId }),
        rows: await this.repo.page({ cronEntryId }, limit, offset),
      }),
      runView,
    );
  }

  async list(userId: string, applicationId: string, query: PaginationQuery) {
    await this.apps.authorize(userId, applicationId);
    return paginate(
      query,
      async (limit, offset) => ({
        total: await this.repo.count({ applicationId }),
        rows: await this.repo.page({ applicationId }, limit, offset),
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
      error_code: r.error_code,
      exit_code: r.exit_code,
      deploy_step: null,
    };
  }
}
