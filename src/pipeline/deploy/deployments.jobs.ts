import type { AppContext } from '../../platform/context.js';
import type { RuntimeLogger } from '../../platform/runtime/application-runtime.js';
import { DeployRunner, settleInterrupted } from './deploy-runner.js';
import type { DeploymentsRepository } from './deployments.repository.js';
import { DEPLOY_JOB, RECONCILE_JOB } from './deployments.service.js';
import { FormationReconciler } from './formation-reconciler.js';
import { OneOffRunner, RUN_INTERRUPTED } from '../run/one-off-runner.js';
import type { OneOffRunsRepository } from '../run/one-off-runs.repository.js';
import { RUN_JOB } from '../run/one-off-runs.service.js';

/**
 * Registers the deployment job kinds in a process that has a runtime (roles `all` and
 * `worker`): `deploy` runs a deployment, `reconcile` matches running instances to the
 * current deployment and counts (after a scale, and to bring processes back on start).
 */
export function registerDeploymentJobs(
  ctx: AppContext,
  records: { deployments: DeploymentsRepository; runs: OneOffRunsRepository },
  logger: RuntimeLogger,
) {
  const { jobs, runtime } = ctx;
  if (!jobs || !runtime) return;
  const reconciler = new FormationReconciler(ctx, records.deployments, runtime);
  const runner = new DeployRunner(ctx, records.deployments, runtime, logger);
  jobs.register(DEPLOY_JOB, (data, job) => runner.run(String(data.recordId), job.jobId, job.signal), {
    // The worker died mid-deploy: the previous release comes back by the `reconcile` queued at the next start.
    onInterrupted: async (data) => {
      await settleInterrupted(ctx, records.deployments, String(data.recordId));
    },
  });
  jobs.register(RECONCILE_JOB, (data, job) => reconciler.reconcile(data.applicationId, String(data.environmentId), job.signal), {
    onInterrupted: async () => 'retry',
  });
  const runs = new OneOffRunner(ctx, records.runs, records.deployments, runtime);
  jobs.register(RUN_JOB, (data, job) => runs.run(String(data.recordId), job.jobId, job.signal), {
    // A one-off may have side effects: never run it twice on its own.
    onInterrupted: async (data) => {
      await records.runs.failIfUnfinished(String(data.recordId), RUN_INTERRUPTED, 'interrupted');
    },
  });
}

/**
 * Queues a `reconcile` for every deployed application environment, so the current releases
 * run again after a start: a start step (src/lifecycle.ts) once the runtime is started,
 * before the job workers.
 */
export async function queueReconcileOfDeployed(ctx: AppContext, repo: DeploymentsRepository): Promise<void> {
  if (!ctx.jobs) return;
  for (const { application_id, environment_id } of await repo.deployedEnvironments()) {
    await ctx.jobs.enqueue(RECONCILE_JOB, { applicationId: application_id, environmentId: environment_id });
  }
}
