import { v7 as uuidv7 } from 'uuid';
import type { AppContext } from '../../platform/context.js';
import { conflict } from '../../platform/errors.js';
import { failureCodeOf } from '../../platform/failures.js';
import type { AttachedStdio } from '../../platform/runtime/port.js';
import type { ApplicationsService } from '../../modules/applications/index.js';
import { requireDeployAccess } from '../../platform/access/environment-protection.js';
import type { DeploymentsRepository } from '../deploy/deployments.repository.js';
import { chosenEnvironmentId } from '../deploy/environment-choice.js';
import { deployLog } from '../deploy/deploy-runner.js';
import type { OneOffRunsRepository } from './one-off-runs.repository.js';
import { oneOffPlan, runFailureCode } from './one-off-runner.js';

/** An interactive session is cut after this unless the caller asks for another limit. */
export const DEFAULT_ATTACHED_TIMEOUT_SECONDS = 3600;
/** Attached runs one server process keeps at once: each holds a connection, a sandbox and a process. */
const MAX_ATTACHED_RUNS = 32;

export interface AttachedRunRequest {
  command: string;
  process_type?: string;
  environment?: string;
  timeout_seconds?: number;
}

/** How an attached run ended, sent as the stream's last frame. */
export interface AttachedRunEnd {
  id: string;
  status: 'succeeded' | 'failed' | 'timed_out';
  exit_code: number | null;
  error_detail: string | null;
}

/**
 * One-off runs attached to the caller's connection (`slipway run`): the command runs in this
 * server process (the same sandbox, limits and scrubbing as a queued run), its standard input
 * is the request body and its output the response, optionally under a terminal. Recorded as a
 * one-off run (status, exit code, a log of its start and end, not of the session's bytes).
 * Needs the local runtime in this process; a queued run (`POST /runs`) works everywhere.
 */
export class AttachedRuns {
  private active = 0;

  constructor(
    private readonly ctx: AppContext,
    private readonly runs: OneOffRunsRepository,
    private readonly deployments: DeploymentsRepository,
    private readonly apps: ApplicationsService,
  ) {}

  /** Checks everything that can be refused with a plain error, and records the run (before any byte is streamed). */
  async open(userId: string, applicationId: string, body: AttachedRunRequest) {
    await this.apps.authorize(userId, applicationId);
    const environmentId = await chosenEnvironmentId(this.ctx.db, applicationId, body.environment);
    await requireDeployAccess(this.ctx.db, userId, environmentId);
    const runtime = this.ctx.runtime;
    if (!runtime || runtime.name !== 'local')
      throw conflict(
        `This server cannot attach to a run: it ${runtime ? 'runs applications on Kubernetes' : 'does not run applications (SLIPWAY_ROLE=api)'}. ` +
          'Queue the run instead, its output follows: slipway run --detach -- <command>',
      );
    if (this.active >= MAX_ATTACHED_RUNS)
      throw conflict(`This server already has ${MAX_ATTACHED_RUNS} attached runs open; end one, or queue this one: slipway run --detach`);
    const serving = await this.deployments.current(applicationId, environmentId);
    if (!serving)
      throw conflict('Nothing is deployed in that environment yet: a run uses the serving release. Deploy first: slipway deploy');
    const release = await this.deployments.release(serving.release_id);
    const processes = release?.processes ?? {};
    const processType = body.process_type ?? ('web' in processes ? 'web' : (Object.keys(processes)[0] ?? 'web'));
    const run = await this.runs.insert({
      id: uuidv7(),
      application_id: applicationId,
      environment_id: environmentId,
      release_id: serving.release_id,
      command: body.command,
      process_type: processType,
      timeout_seconds: body.timeout_seconds ?? DEFAULT_ATTACHED_TIMEOUT_SECONDS,
      requested_by: userId,
    });
    this.active++;
    return run;
  }

  /** Runs what `open` recorded with the caller's input and output; resolves with how it ended. */
  async run(run: Awaited<ReturnType<AttachedRuns['open']>>, io: AttachedStdio, signal: AbortSignal): Promise<AttachedRunEnd> {
    const log = deployLog((text) => this.runs.appendLog(run.id, text), this.ctx.logger, `attached run ${run.id}`);
    const runtime = this.ctx.runtime!;
    try {
      await this.runs.update(run.id, { status: 'running', started_at: new Date() });
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
      log.line(
        `running \`${run.command}\` as ${run.process_type} in release v${plan.release.version}, attached${io.tty ? ' to a terminal' : ''} (timeout ${run.timeout_seconds}s)`,
      );
      // Platform notes (the sandbox could not start, its network ended) go to the log and the caller.
      const note = (line: string) => {
        log.line(line);
        io.write('stderr', Buffer.from(`slipway: ${line}\n`));
      };
      await runtime.prepare(plan, note);
      const result = await runtime.runOnce(plan, run.process_type, {
        deadline: Date.now() + run.timeout_seconds * 1000,
        signal,
        onOutput: note,
        attach: io,
      });
      const status = result.timedOut ? 'timed_out' : result.exitCode === 0 ? 'succeeded' : 'failed';
      const detail = result.timedOut
        ? `Killed after its timeout of ${run.timeout_seconds}s`
        : (result.reason ??
          (signal.aborted
            ? 'Ended when the caller disconnected'
            : result.exitCode === null
              ? `Ended by ${result.signal ?? 'an unknown cause'}`
              : result.exitCode === 0
                ? null
                : `Exit code ${result.exitCode}`));
      log.line(detail ? `run ${status}: ${detail}` : 'run succeeded');
      await log.flush();
      await this.runs.update(run.id, {
        status,
        exit_code: result.exitCode,
        error_detail: detail,
        error_code: runFailureCode(status, result),
        finished_at: new Date(),
      });
      return { id: run.id, status, exit_code: result.exitCode, error_detail: detail };
    } catch (err) {
      await log.flush();
      const detail = `Run failed: ${err instanceof Error ? err.message : String(err)}`;
      await this.runs.failIfUnfinished(run.id, detail, failureCodeOf(err));
      return { id: run.id, status: 'failed', exit_code: null, error_detail: detail };
    } finally {
      this.active--;
    }
  }
}
