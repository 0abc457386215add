import { v7 as uuidv7 } from 'uuid';
import type { AppContext } from '../../platform/context.js';
import type { PipelineStep } from '../../platform/db/schema.js';
import { conflict, notFound } from '../../platform/errors.js';
import { iso, isoOrNull, paginate, type PaginationQuery } from '../../platform/http/schemas.js';
import { requireJobRoom } from '../../platform/jobs/require-jobs.js';
import type { ApplicationsService } from '../applications/index.js';
import { requireDeployAccess } from '../environments/index.js';
import { productionEnvironmentId } from '../pipeline/index.js';
import { DeploymentsRepository } from './deployments.repository.js';

type DeploymentWithRelease = NonNullable<Awaited<ReturnType<DeploymentsRepository['withRelease']>>>;

/** Log statuses of decisions.md: a queued deployment reads `deploying` (with `started` null). */
export const deploymentLogStatus = (status: string) => (status === 'queued' ? 'deploying' : status) as 'deploying' | 'complete' | 'error';

export const DEPLOY_JOB = 'deploy';
export const RECONCILE_JOB = 'reconcile';

function summary(d: DeploymentWithRelease) {
  return {
    id: d.id,
    application_id: d.application_id,
    environment_id: d.environment_id,
    release: { id: d.release_id, version: d.release_version, commit_sha: d.release_commit_sha },
    status: deploymentLogStatus(d.status),
    complete: d.complete,
    error: d.error,
    error_detail: d.error_detail,
    deploy_metadata: d.deploy_metadata,
    deploy_step: d.deploy_step as PipelineStep | null,
    job_id: d.job_id,
    started: isoOrNull(d.started_at),
    finished: isoOrNull(d.finished_at),
    created: iso(d.created_at),
    updated: iso(d.updated_at),
  };
}

/** The API side of deployments: queue them, list and show them. Workers run them (DeployRunner). */
export class DeploymentsService {
  readonly repo: DeploymentsRepository;

  constructor(private readonly ctx: AppContext, private readonly apps: ApplicationsService) {
    this.repo = new DeploymentsRepository(ctx.db);
  }

  /** Queues a deployment of a release (behind the application's earlier pipeline jobs). */
  async deployRelease(userId: string, releaseId: string) {
    const release = await this.repo.release(releaseId);
    if (!release) throw notFound('Release');
    await this.apps.authorize(userId, release.application_id);
    await requireDeployAccess(this.ctx.db, userId, release.environment_id);
    if (release.error) throw conflict(`Release v${release.version} failed to build and cannot be deployed`);
    return this.queue(release.application_id, release.environment_id, release.id);
  }

  /** Records a queued deployment and its job (also used by the build → release → deploy chain). */
  async queue(applicationId: string, environmentId: string, releaseId: string) {
    const jobs = await requireJobRoom(this.ctx, applicationId);
    const deployment = await this.repo.insert({ id: uuidv7(), application_id: applicationId, environment_id: environmentId, release_id: releaseId });
    const jobId = await jobs.enqueue(DEPLOY_JOB, { applicationId, environmentId, recordId: deployment.id });
    await this.repo.update(deployment.id, { job_id: jobId });
    return { ok: true, deployment_id: deployment.id };
  }

  async list(userId: string, applicationId: string, query: PaginationQuery) {
    await this.apps.authorize(userId, applicationId);
    const environmentId = await productionEnvironmentId(this.ctx.db, applicationId);
    return paginate(query, async (limit, offset) => ({
      total: await this.repo.count(applicationId, environmentId),
      rows: await this.repo.page(applicationId, environmentId, limit, offset),
    }), summary);
  }

  private async visible(userId: string, deploymentId: string) {
    const d = await this.repo.withRelease(deploymentId);
    if (!d) throw notFound('Deployment');
    await this.apps.authorize(userId, d.application_id);
    return d;
  }

  async detail(userId: string, deploymentId: string) {
    const d = await this.visible(userId, deploymentId);
    return { ...summary(d), deploy_log: d.deploy_log };
  }

  async log(userId: string, deploymentId: string) {
    const d = await this.visible(userId, deploymentId);
    return {
      status: deploymentLogStatus(d.status), log_text: d.deploy_log, error: d.error, error_detail: d.error_detail,
      deploy_step: d.deploy_step as PipelineStep | null,
    };
  }

  /** After a scale: running instances follow the new counts (through the queue, never racing a deploy). */
  async scaled(applicationId: string): Promise<void> {
    if (!this.ctx.jobs) return;
    const environmentId = await this.repo.productionEnvironmentId(applicationId);
    if (!environmentId || !(await this.repo.current(applicationId, environmentId))) return;
    await this.ctx.jobs.enqueue(RECONCILE_JOB, { applicationId, environmentId });
  }
}
