import type { AppContext } from '../../platform/context.js';
import { PipelineFailure, failureCodeOf, type FailureCode } from '../../platform/failures.js';
import { BufferedLog, tapRecordLog, type LogWriteFailureLogger } from '../../platform/logs/index.js';
import {
  RolloutFailure,
  type ApplicationRuntime,
  type RuntimeLogger,
  type WorkloadPlan,
} from '../../platform/runtime/application-runtime.js';
import type { OneOffResult } from '../../platform/runtime/port.js';
import { isCancelled } from '../../platform/jobs/pipeline-jobs.js';
import { recordRestorePoints } from '../../platform/addons/index.js';
import { stepOf, type DeploymentsRepository, type DeployStepName } from './deployments.repository.js';
import { RECONCILE_JOB } from './deployments.service.js';
import { FormationReconciler } from './formation-reconciler.js';
import { stabilityWindow } from './stability-window.js';
import { workloadPlan } from './workload-plan.js';

/** A deployment failing for a reason worth showing as its `error_detail`. */
class DeployFailure extends PipelineFailure {
  constructor(message: string, code: FailureCode = 'deploy_failed') {
    super(message, code);
  }
}

/** A deployment's (or one-off run's) log: timestamped lines, batched every 100 ms (a chatty release command is one UPDATE per batch). */
export function deployLog(
  append: (text: string) => Promise<unknown>,
  logger: LogWriteFailureLogger | undefined,
  label: string,
): BufferedLog {
  return new BufferedLog({ append, flushMs: 100, format: (line) => `${new Date().toISOString()} ${line}`, logger, label });
}

/** The message a cancel aborted the job with. */
function cancelledDetail(signal: AbortSignal): string {
  return signal.reason instanceof Error ? signal.reason.message : 'Cancelled';
}

export const INTERRUPTED_DETAIL = 'Interrupted by a restart of the platform before it finished; the previous release keeps serving';

/**
 * Records a deployment whose worker stopped or died half-way. Local processes died with
 * their worker; a cluster keeps the half-rolled release, so a reconcile is queued at once
 * (any live worker runs it) to apply the serving release again.
 */
export async function settleInterrupted(ctx: AppContext, repo: DeploymentsRepository, deploymentId: string): Promise<void> {
  const deployment = await repo.findById(deploymentId);
  if (!(await repo.failIfUnfinished(deploymentId, INTERRUPTED_DETAIL, 'interrupted')) || !deployment) return;
  if (ctx.runtime?.sharedWorkloads && ctx.jobs) {
    await ctx.jobs.enqueue(RECONCILE_JOB, { applicationId: deployment.application_id, environmentId: deployment.environment_id });
  }
}

/** A one-off process's end as a phrase: "exit code 3", "signal SIGKILL", "timed out", or that it never ran. */
const ending = (r: OneOffResult) =>
  r.timedOut
    ? 'timed out'
    : r.reason
      ? r.reason
      : r.signal
        ? `signal ${r.signal}`
        : r.exitCode === null
          ? 'it did not start; the deployment log says why'
          : `exit code ${r.exitCode}`;

/**
 * Runs one deployment through Setup, Release, Deploy, Rollout, Done, whatever the runtime
 * (`local` processes or `kubernetes`). The runtime starts the new release beside the
 * previous one and switches traffic only once it is ready. Any failure (release or
 * postdeploy command, rollout timeout, crash loop) fails the deployment and reconciles the
 * environment back to the deployment that was serving, so the previous release keeps serving.
 */
export class DeployRunner {
  private readonly reconciler: FormationReconciler;

  constructor(
    private readonly ctx: AppContext,
    private readonly repo: DeploymentsRepository,
    private readonly runtime: ApplicationRuntime,
    private readonly logger: RuntimeLogger,
  ) {
    this.reconciler = new FormationReconciler(ctx, repo, runtime);
  }

  /** Issue 31: a restore point on each attached Postgres add-on before the migrations run (see recordRestorePoints). */
  private async restorePoints(release: { id: string; application_id: string; environment_id: string; version: number }, log: BufferedLog) {
    const { points, skipped } = await recordRestorePoints(
      this.ctx.db,
      this.ctx.secrets,
      release,
      this.runtime.addonRestorePoint?.bind(this.runtime),
    ).catch((err: Error) => {
      throw new DeployFailure(err.message, 'release_command_failed');
    });
    for (const p of points) log.line(`Release: restore point ${p.name} recorded on add-on ${p.addon} (${p.lsn})`);
    for (const name of skipped) log.line(`Release: add-on ${name} is not running: no restore point on it`);
  }

  async run(deploymentId: string, jobId: string | null, signal: AbortSignal): Promise<void> {
    const deployment = await this.repo.findById(deploymentId);
    if (!deployment || deployment.status !== 'queued') return; // settled already (e.g. after a restart)
    const log = deployLog(
      async (text) => {
        await this.repo.appendLog(deploymentId, text);
        tapRecordLog({ table: 'deployments', recordId: deploymentId, text });
      },
      this.logger,
      `deployment ${deploymentId}`,
    );
    const step = async (name: DeployStepName, message: string) => {
      log.line(`${name}: ${message}`);
      await log.flush();
      await this.repo.update(deploymentId, { deploy_step: JSON.stringify(stepOf(name)) });
    };
    let rolledOut = false;
    try {
      await this.repo.update(deploymentId, { status: 'deploying', started_at: new Date(), job_id: jobId });
      const release = await this.repo.release(deployment.release_id);
      if (!release) throw new DeployFailure('The release no longer exists');
      await step('Setup', `deploying release v${release.version}`);
      if (!release.built) {
        throw new DeployFailure(
          `Release v${release.version} is not built (${release.status}${release.error_detail ? `: ${release.error_detail}` : ''})`,
        );
      }
      const image = release.image_ref ? await this.repo.image(release.image_ref) : undefined;
      if (!image) throw new DeployFailure(`Release v${release.version} has no image`);
      const target = await this.repo.target(deployment.application_id, deployment.environment_id);
      if (!target) throw new DeployFailure('The application or its environment no longer exists');
      const plan = await workloadPlan(this.ctx.db, this.ctx.secrets, deploymentId, release, image, target, this.ctx.config.ROUTER_DOMAIN);
      // How long new instances may take to answer, and must then keep running: the application's settings, else the platform's.
      plan.healthCheck.timeoutSeconds = target.healthCheckTimeout ?? this.ctx.config.HEALTH_CHECK_TIMEOUT_SECONDS;
      const current = await this.repo.current(deployment.application_id, deployment.environment_id);
      const window = stabilityWindow(target.stabilityWindow, !current, this.ctx.config);
      plan.stabilitySeconds = window.seconds;
      // A configuration change on the image already serving (issue 35, goal 5): served as soon as it is healthy.
      const serving = current && window.seconds > 0 ? await this.repo.release(current.release_id) : undefined;
      plan.switchBeforeWindow = Boolean(serving && serving.image_ref === release.image_ref);
      log.line(
        `Setup: stability window ${window.seconds}s (${window.why})` +
          (plan.switchBeforeWindow
            ? '; same image as the release serving: traffic switches once healthy, the previous instances stand by'
            : ''),
      );
      const deadline = Date.now() + plan.timeoutSeconds * 1000;
      await this.runtime.prepare(plan, (l) => log.line(`Setup: ${l}`));

      // Release: the one-off `release` command; its failure fails the deployment.
      if (plan.processes.release) {
        await step('Release', `running release command: ${plan.processes.release.cmd}`);
        await this.restorePoints(release, log);
        const result = await this.runOnce(plan, 'release', deadline, signal, log);
        if (result.timedOut)
          throw new DeployFailure(
            `Deployment timed out after ${plan.timeoutSeconds}s: the release command did not finish`,
            'release_command_failed',
          );
        if (result.exitCode !== 0) throw new DeployFailure(`The release command failed (${ending(result)})`, 'release_command_failed');
      } else {
        await step('Release', 'no release command in the Procfile');
      }

      // Deploy and Rollout: the runtime starts the new release beside the previous one and switches when ready.
      const rollout = await this.runtime.rollout(plan, { step, line: (l) => log.line(l) }, deadline, signal);
      rolledOut = true;
      if (signal.aborted) throw new DeployFailure(INTERRUPTED_DETAIL, 'interrupted');
      await this.repo.update(deploymentId, {
        deploy_metadata: JSON.stringify({
          url: rollout.url,
          hostname: plan.hostname,
          runtime: this.runtime.name,
          release_version: plan.release.version,
          commit_sha: release.commit_sha,
          process_counts: plan.formation,
          instances: rollout.instances,
        }),
      });

      // Done: `postdeploy` runs once the new release serves; its failure fails the deployment (and rolls back).
      if (plan.processes.postdeploy) {
        await step('Done', `running postdeploy command: ${plan.processes.postdeploy.cmd}`);
        const result = await this.runOnce(plan, 'postdeploy', Math.max(deadline, Date.now() + 30_000), signal, log);
        if (result.exitCode !== 0 || result.timedOut)
          throw new DeployFailure(`The postdeploy command failed (${ending(result)})`, 'release_command_failed');
      } else {
        await step('Done', 'no postdeploy command in the Procfile');
      }
      log.line(`deployment complete${rollout.url ? `: ${rollout.url}` : ''}`);
      await log.flush();
      await this.repo.update(deploymentId, {
        status: 'complete',
        complete: true,
        error: false,
        finished_at: new Date(),
        deploy_step: JSON.stringify(stepOf('Done')),
      });
    } catch (err) {
      await log.flush();
      const expected = err instanceof DeployFailure || err instanceof RolloutFailure;
      const detail = expected ? err.message : `Deployment failed: ${err instanceof Error ? err.message : String(err)}`;
      if (isCancelled(signal)) {
        // A cancel is not a shutdown: this worker goes on, so it puts the serving release back itself.
        log.line('cancelled: stopping the new instances; the previous release keeps serving');
        await log.flush();
        await this.restorePrevious(deployment.application_id, deployment.environment_id, rolledOut, new AbortController().signal);
        await this.repo.failIfUnfinished(deploymentId, cancelledDetail(signal), 'cancelled');
        return;
      } else if (signal.aborted) {
        await settleInterrupted(this.ctx, this.repo, deploymentId);
      } else {
        // Back to the deployment that was serving before the failure is recorded, so a settled
        // deployment means a settled environment.
        if (rolledOut) log.line('switching back to the previous release');
        await log.flush();
        await this.restorePrevious(deployment.application_id, deployment.environment_id, rolledOut, signal);
        await this.repo.failIfUnfinished(deploymentId, detail, failureCodeOf(err), err instanceof RolloutFailure ? err.diagnosis : null);
      }
      if (!expected) throw err;
    }
  }

  private async runOnce(
    plan: WorkloadPlan,
    processType: string,
    deadline: number,
    signal: AbortSignal,
    log: BufferedLog,
  ): Promise<OneOffResult> {
    const result = await this.runtime.runOnce(plan, processType, { deadline, signal, onOutput: (l) => log.line(`${processType} | ${l}`) });
    await log.flush();
    if (signal.aborted) throw new DeployFailure(INTERRUPTED_DETAIL, 'interrupted');
    return result;
  }

  private async restorePrevious(applicationId: string, environmentId: string, rolledOut: boolean, signal: AbortSignal): Promise<void> {
    try {
      await this.reconciler.reconcile(applicationId, environmentId, signal);
    } catch (err) {
      // The deployment is still recorded as failed; a later reconcile (scale, restart) tries again.
      this.logger.warn({ err, applicationId, environmentId, rolledOut }, 'restoring the previous release after a failed deployment failed');
    }
  }
}
