import { v7 as uuidv7 } from 'uuid';
import type { AppContext } from '../../platform/context.js';
import { requireProtectedEnvironmentAdmin } from '../../platform/access/environment-protection.js';
import { conflict, forbidden, notFound } from '../../platform/errors.js';
import { ExecRefused, type ExecProcess } from '../../platform/runtime/index.js';
import { iso, isoOrNull } from '../../platform/http/schemas.js';
import { hashToken, newToken } from '../../platform/crypto/tokens.js';
import type { ApplicationsService } from '../applications/index.js';
import { chosenEnvironmentId } from '../../pipeline/index.js';
import { ATTACH_WITHIN_SECONDS, type ExecSessionRow, type ExecSessionsRepository } from './exec.repository.js';

export interface ExecOpenBody {
  command?: string | null;
  tty?: boolean;
  rows?: number;
  cols?: number;
  term?: string;
  environment?: string;
}

function sessionView(row: ExecSessionRow) {
  return {
    id: row.id,
    application_id: row.application_id,
    environment_id: row.environment_id,
    instance_id: row.instance_id,
    instance: row.instance_name,
    command: row.command,
    tty: row.tty,
    created_at: iso(row.created_at),
    started_at: isoOrNull(row.started_at),
    finished_at: isoOrNull(row.finished_at),
    exit_code: row.exit_code,
  };
}

/**
 * `slipway exec`: a command (or a shell) inside a running instance. Opening a session checks
 * everything (membership, the environment's protection, the instance) and records it, which
 * audits who entered which instance with what command; the session is then attached once, by
 * the same user, over a WebSocket to the process that runs the instance.
 */
export class InstanceExecService {
  constructor(
    private readonly ctx: AppContext,
    private readonly repo: ExecSessionsRepository,
    private readonly apps: ApplicationsService,
  ) {}

  async open(userId: string, applicationId: string, instanceRef: string | null, body: ExecOpenBody, processType?: string) {
    const environmentId = await this.authorizeOpen(userId, applicationId, body.environment);
    const instance = await this.findInstance(applicationId, environmentId, instanceRef, processType);
    if (!instance)
      throw instanceRef
        ? notFound(`Instance '${instanceRef}'`)
        : conflict(`No ${processType ? `${processType} ` : ''}instance of the application runs in that environment`);
    if (instance.state === 'stopped' || instance.state === 'crashed')
      throw conflict(`Instance ${instance.process_type}.${instance.ordinal} is ${instance.state}: exec needs a running one`);
    const row = await this.repo.insert({
      id: uuidv7(),
      application_id: applicationId,
      environment_id: environmentId,
      instance_id: instance.id,
      instance_name: `${instance.process_type}.${instance.ordinal}`,
      user_id: userId,
      command: body.command ?? null,
      tty: body.tty ?? false,
    });
    return {
      ...sessionView(row),
      stream_path: `/v1/exec-sessions/${row.id}/stream`,
      attach_within_seconds: ATTACH_WITHIN_SECONDS,
    };
  }

  /**
   * The instance by reference (id or `web.1`), or the first running one (web first): from the
   * instance rows, or where the runtime keeps none (Kubernetes) from the runtime's own list.
   */
  private async findInstance(applicationId: string, environmentId: string, instanceRef: string | null, processType?: string) {
    const listed = this.ctx.runtime?.execInstances;
    if (!listed) {
      return instanceRef
        ? this.repo.findInstance(applicationId, environmentId, instanceRef)
        : this.repo.firstRunning(applicationId, environmentId, processType);
    }
    const instances = await listed.call(this.ctx.runtime, applicationId, environmentId);
    if (instanceRef) return instances.find((i) => i.id === instanceRef || `${i.process_type}.${i.ordinal}` === instanceRef);
    const running = instances.filter((i) => i.state !== 'stopped' && (!processType || i.process_type === processType));
    return running.find((i) => i.process_type === 'web') ?? running.sort((a, b) => a.process_type.localeCompare(b.process_type))[0];
  }

  /** Whether the caller may open a session in the application's environment (id or slug; default production): its id. */
  async authorizeOpen(userId: string, applicationId: string, environment: string | undefined) {
    await this.apps.authorize(userId, applicationId);
    const environmentId = await chosenEnvironmentId(this.ctx.db, applicationId, environment);
    await requireProtectedEnvironmentAdmin(this.ctx.db, userId, { environmentId }, 'its instances (a shell inside one)');
    return environmentId;
  }

  /**
   * Opens a session (every check of open()) on the first running instance of a process type, to
   * be attached over the SSH gateway: the answer's token (stored only as its hash) attaches it once,
   * within ATTACH_WITHIN_SECONDS. Ancla's `ancla ssh` and `ancla shell`.
   */
  async openForSsh(userId: string, applicationId: string, environmentId: string, processType: string, command: string | null) {
    const session = await this.open(userId, applicationId, null, { environment: environmentId, command }, processType);
    const token = newToken('sx');
    await this.repo.setSshToken(session.id, hashToken(token));
    return { session, token };
  }

  /** Whether this SSH token would attach a session now (the gateway's login check; attaching claims it). */
  async sshTokenWaits(token: string) {
    return (await this.repo.findWaitingBySshToken(hashToken(token))) !== undefined;
  }

  /**
   * Starts the process of the session an SSH token attaches (refused when the token is unknown,
   * used or expired), running what the SSH client asked: its command or a shell, with its terminal.
   * The membership and protection checks ran when the session was opened, a minute ago at most.
   */
  async attachWithSshToken(token: string, run: { command: string | null; terminal: { rows: number; cols: number; term: string } | null }) {
    const session = await this.repo.claimBySshToken(hashToken(token), { command: run.command, tty: run.terminal !== null });
    if (!session) throw notFound('Exec session (its token is unknown, used already, or expired)');
    // Its user's rights again at attach (a membership removed since the token was given takes it with it).
    if (!session.user_id) throw notFound('Exec session (its user is gone)');
    await this.authorizeOpen(session.user_id, session.application_id, session.environment_id);
    return this.start(session, run.terminal);
  }

  /** Whether the caller may attach the session: its application's member, and the user who opened it. */
  async authorizeAttach(userId: string, sessionId: string): Promise<void> {
    const session = await this.repo.find(sessionId);
    if (!session) throw notFound('Exec session');
    await this.apps.authorize(userId, session.application_id);
    if (session.user_id !== userId) throw forbidden('This exec session was opened by another user');
  }

  /** Starts the session's process (refused when it was attached before or expired). */
  async attach(userId: string, sessionId: string, terminal: { rows: number; cols: number; term: string } | null) {
    const session = await this.repo.claim(sessionId, userId);
    if (!session) throw notFound('Exec session (attached already, or expired)');
    return this.start(session, terminal);
  }

  /** Runs a claimed session's process in its instance (the runtime's exec: the one way into a sandbox). */
  private async start(session: ExecSessionRow, terminal: { rows: number; cols: number; term: string } | null) {
    const runtime = this.ctx.runtime;
    if (!runtime?.exec) {
      await this.repo.finish(session.id, null);
      throw conflict('This process runs no instances: exec is served by the process that runs them (SLIPWAY_ROLE=all)');
    }
    let process: ExecProcess;
    try {
      process = await runtime.exec(session.instance_id, {
        command: session.command,
        ...(session.tty && terminal ? { tty: terminal } : {}),
      });
    } catch (err) {
      await this.repo.finish(session.id, null);
      if (err instanceof ExecRefused) throw conflict(`Instance ${session.instance_name}: ${err.message}`);
      throw err;
    }
    return { session: sessionView(session), process, finish: (exitCode: number | null) => this.repo.finish(session.id, exitCode) };
  }
}
