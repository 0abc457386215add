import type { AppContext } from '../../platform/context.js';
import { failureCodeOf, PipelineFailure, type FailureCode } from '../../platform/failures.js';
import type { OneOffResult } from '../../platform/runtime/port.js';
import type { ApplicationRuntime, WorkloadPlan } from '../../platform/runtime/application-runtime.js';
import { RolloutFailure } from '../../platform/runtime/application-runtime.js';
import { deployLog } from '../deploy/deploy-runner.js';
import type { DeploymentsRepository } from '../deploy/deployments.repository.js';
import type { OneOffRunsRepository } from './one-off-runs.repository.js';
import { workloadPlan } from '../deploy/workload-plan.js';

export const RUN_INTERRUPTED = 'Interrupted by a restart of the platform before it finished';

/** A run that could not go ahead, with the code its record carries. */
class RunFailure extends PipelineFailure {}

/**
 * Runs a one-off command (worker side) in the release the run was queued against, with
 * that release's frozen configuration and the chosen process type's environment and pod
 * class, through the runtime's one-off mechanism (the one `release` and `postdeploy` use):
 * isolation, limits and scrubbing are the same. The timeout kills it (`timed_out`).
 */
export class OneOffRunner {
  constructor(
    private readonly ctx: AppContext,
    private readonly runs: OneOffRunsRepository,
    private readonly deployments: DeploymentsRepository,
    private readonly runtime: ApplicationRuntime,
  ) {}

  async run(runId: string, jobId: string | null, signal: AbortSignal): Promise<void> {
    const run = await this.runs.find(runId);
    if (!run || run.status !== 'pending') return;
    const log = deployLog((text) => this.runs.appendLog(runId, text), this.ctx.logger, `one-off run ${runId}`);
    try {
      await this.runs.update(runId, { status: 'running', started_at: new Date(), job_id: jobId });
      const plan = await oneOffPlan(
        this.ctx,
        this.deployments,
        run.id,
        run.release_id,
        run.application_id,
        run.environment_id,
        run.process_type,
        run.command,
      );
      log.line(`running \`${run.command}\` as ${run.process_type} in release v${plan.release.version} (timeout ${run.timeout_seconds}s)`);
      await log.flush();
      await this.runtime.prepare(plan, (l) => log.line(l));
      const result = await this.runtime.runOnce(plan, run.process_type, {
        deadline: Date.now() + run.timeout_seconds * 1000,
        signal,
        onOutput: (l) => log.line(l),
      });
      if (signal.aborted) throw new RunFailure(RUN_INTERRUPTED, 'interrupted');
      const status = result.timedOut ? 'timed_out' : result.exitCode === 0 ? 'succeeded' : 'failed';
      const detail = result.timedOut
        ? `Killed after its timeout of ${run.timeout_seconds}s`
        : result.reason
          ? result.reason
          : result.exitCode === null
            ? `Ended by ${result.signal ?? 'an unknown cause'}`
            : result.exitCode === 0
              ? null
              : `Exit code ${result.exitCode}`;
      log.line(detail ? `run ${status}: ${detail}` : 'run succeeded');
      await log.flush();
      await this.runs.update(runId, {
        status,
        exit_code: result.exitCode,
        error_detail: detail,
        error_code: runFailureCode(status, result),
        finished_at: new Date(),
      });
    } catch (err) {
      await log.flush();
      const expected = err instanceof RunFailure || err instanceof RolloutFailure;
      await this.runs.failIfUnfinished(
        runId,
        expected ? err.message : `Run failed: ${err instanceof Error ? err.message : String(err)}`,
        failureCodeOf(err),
      );
      if (!expected) throw err;
    }
  }
}

/** The release's workload plan with the command in place of the process type's own (queued and attached runs). */
export async function oneOffPlan(
  ctx: AppContext,
  deployments: DeploymentsRepository,
  runId: string,
  releaseId: string | null,
  applicationId: string,
  environmentId: string,
  processType: string,
  command: string,
): Promise<WorkloadPlan> {
  const release = releaseId ? await deployments.release(releaseId) : undefined;
  if (!release) throw new RunFailure('The release of this run no longer exists', 'release_failed');
  const image = release.image_ref ? await deployments.image(release.image_ref) : undefined;
  if (!image) throw new RunFailure(`Release v${release.version} has no image`, 'release_failed');
  const target = await deployments.target(applicationId, environmentId);
  if (!target) throw new RunFailure('The application or its environment no longer exists', 'deploy_failed');
  // The run's own id names what the runtime creates for it (a Kubernetes Job), so runs never collide.
  const plan = await workloadPlan(ctx.db, ctx.secrets, runId, release, image, target, ctx.config.ROUTER_DOMAIN);
  const base = plan.processes[processType];
  const resources = plan.resources[processType] ?? plan.resources.web ?? Object.values(plan.resources)[0];
  return {
    ...plan,
    processes: { ...plan.processes, [processType]: { cmd: command, env: base?.env ?? {} } },
    resources: resources ? { ...plan.resources, [processType]: resources } : plan.resources,
  };
}

/** The code of a finished run: none when it succeeded; a memory kill is `oom` whatever its exit status. */
export function runFailureCode(status: 'succeeded' | 'failed' | 'timed_out', result: OneOffResult): FailureCode | null {
  if (status === 'succeeded') return null;
  if (status === 'timed_out') return 'command_timeout';
  return result.reason?.startsWith('OOM') ? 'oom' : 'command_failed';
}
