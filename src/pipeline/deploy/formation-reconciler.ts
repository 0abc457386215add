import type { AppContext } from '../../platform/context.js';
import type { ApplicationRuntime, WorkloadPlan } from '../../platform/runtime/application-runtime.js';
import type { DeploymentsRepository } from './deployments.repository.js';
import { workloadPlan } from './workload-plan.js';

/**
 * Makes what runs for an application's environment match its current deployment (the
 * latest complete one) and process counts: after a scale (no new release), after a failed
 * deployment (back to the serving release) and after a platform restart. Runs inside a
 * pipeline job, so it never races a deployment of the same application.
 */
export class FormationReconciler {
  constructor(
    private readonly ctx: AppContext,
    private readonly repo: DeploymentsRepository,
    private readonly runtime: ApplicationRuntime,
  ) {}

  async reconcile(applicationId: string, environmentId: string, signal: AbortSignal): Promise<void> {
    await this.runtime.reconcile({ applicationId, environmentId }, await this.currentPlan(applicationId, environmentId), signal);
  }

  /** The plan of the deployment now serving, or null when nothing should run. */
  private async currentPlan(applicationId: string, environmentId: string): Promise<WorkloadPlan | null> {
    const current = await this.repo.current(applicationId, environmentId);
    const target = await this.repo.target(applicationId, environmentId);
    if (!current || !target) return null;
    const release = await this.repo.release(current.release_id);
    const image = release?.image_ref ? await this.repo.image(release.image_ref) : undefined;
    if (!release || !image) return null;
    return workloadPlan(this.ctx.db, this.ctx.secrets, current.id, release, image, target, this.ctx.config.ROUTER_DOMAIN);
  }
}
