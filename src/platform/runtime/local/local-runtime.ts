import { ExecRefused } from './instance-exec.js';
import type { ExecProcess, ExecRequest } from '../port.js';
import { existsSync } from 'node:fs';
import type {
  ApplicationRuntime,
  AppOutputLine,
  AppUsage,
  OneOffOptions,
  RolloutLog,
  RolloutResult,
  RuntimeLogger,
  RuntimeStartOptions,
  WorkloadPlan,
  WorkloadTarget,
} from '../application-runtime.js';
import { RolloutFailure } from '../application-runtime.js';
import type { OneOffResult, InstanceStatus } from '../port.js';
import type { RuntimeService } from '../runtime.service.js';
import { NO_ISOLATION_WARNING, type Sandbox } from '../../sandbox/index.js';
import { describeDiagnosis, diagnosisLines, type DeployDiagnosis } from '../diagnosis.js';
import type { VolumeDisks } from '../../volumes/index.js';
import type { InstanceSpec } from '../port.js';
import { describeFailure, rolloutFailureCode, freeOrdinals, instanceSpec, isWeb, limitsOf, processEnv, routeUrl } from './instance-plan.js';

const silent: RuntimeLogger = { info() {}, warn() {}, error() {} };

/** Lines of the new instances' own output a deployment log shows during the rollout. */
const ROLLOUT_OUTPUT_LINES = 200;

/** An instance that ended on its own (or a process without a health check that did not keep running). */
const crashedOrGone = (s: InstanceStatus | undefined) => !s || s.state === 'crashed' || s.restartCount > 0 || !isWeb(s.labels.processType);

/** A failure's facts in the deployment log (its output already showed there, line by line). */
function logDiagnosis(log: RolloutLog, diagnosis: DeployDiagnosis | null) {
  if (!diagnosis) return;
  for (const line of diagnosisLines({ ...diagnosis, output: [] })) log.line(`Rollout: ${line}`);
}

/**
 * Runs applications as processes on this machine (the embedded default). A rollout starts
 * the new instances beside the previous release's; nothing moves until every new web
 * instance is healthy; then the router switches in one step and the old instances drain
 * and stop. Instance tracking, health checks and routing live in `RuntimeService`.
 */
export class LocalRuntime implements ApplicationRuntime {
  readonly name = 'local' as const;
  readonly sharedWorkloads = false;
  private logger: RuntimeLogger = silent;

  constructor(
    readonly runtimeService: RuntimeService,
    private readonly sandbox: Sandbox | null = null,
    /** Persistent volumes' disks (null: this runtime refuses a plan with volumes). */
    private readonly volumes: VolumeDisks | null = null,
  ) {}

  get router() {
    return this.runtimeService.router;
  }

  exec(instanceId: string, request: ExecRequest): Promise<ExecProcess> {
    const driver = this.runtimeService.driver;
    if (!driver.exec) throw new ExecRefused(`the ${driver.name} runtime cannot run commands inside instances`);
    return driver.exec(instanceId, request);
  }

  async start(options: RuntimeStartOptions): Promise<void> {
    this.logger = options.logger;
    this.runtimeService.setWorkerId(options.workerId);
    this.runtimeService.setLogger(options.logger);
    // The sandbox's probe (a few short processes) runs beside the router's start (the edge process's boot).
    await Promise.all([this.checkIsolation(), this.runtimeService.start()]);
  }

  /** Says at every start how applications are confined (never silently unconfined). */
  private async checkIsolation() {
    if (!this.sandbox) {
      this.logger.warn({ isolation: 'none' }, NO_ISOLATION_WARNING);
      return;
    }
    try {
      await this.sandbox.ready();
      this.logger.info({ isolation: 'sandbox' }, 'applications run sandboxed (bubblewrap, one user per application, cgroup limits)');
    } catch (err) {
      // Fail closed: the API stays up, every instance start fails with this reason.
      this.logger.error(
        { isolation: 'sandbox' },
        `applications cannot run: ${(err as Error).message}; install what is missing or set RUNTIME_ISOLATION=none (single team only)`,
      );
    }
  }

  shutdown(): Promise<void> {
    return this.runtimeService.shutdown();
  }

  onShutdown(hook: () => Promise<void> | void): void {
    this.runtimeService.onShutdown(hook);
  }

  /** Stop the control plane only: the instances and a separate edge keep serving, the next start adopts both. */
  keepServingOnShutdown(): void {
    this.runtimeService.keepServingOnShutdown();
    this.router.keepServing?.();
  }

  onInstanceOutput(listener: (line: AppOutputLine) => void): void {
    this.runtimeService.driver.onOutput((o) =>
      listener({
        applicationId: o.labels.applicationId,
        environmentId: o.labels.environmentId,
        instanceId: o.instanceId,
        processType: o.labels.processType,
        stream: o.stream,
        line: o.line,
        at: o.at,
      }),
    );
  }

  async prepare(plan: WorkloadPlan): Promise<void> {
    this.artifactOf(plan);
  }

  async runOnce(plan: WorkloadPlan, processType: string, options: OneOffOptions): Promise<OneOffResult> {
    const resources = plan.resources[processType];
    const mounts = await this.oneOffMounts(plan, processType);
    return this.runtimeService.driver.runOnce({
      applicationId: plan.application.id,
      environmentId: plan.environment.id,
      ...(resources ? { limits: limitsOf(resources) } : {}),
      command: plan.processes[processType]!.cmd,
      artifactPath: this.artifactOf(plan),
      env: processEnv(plan, processType),
      secrets: plan.secrets,
      timeoutMs: Math.max(1, options.deadline - Date.now()),
      signal: options.signal,
      onOutput: options.onOutput,
      ...(options.attach ? { attach: options.attach } : {}),
      ...(mounts.length ? { mounts } : {}),
    });
  }

  /**
   * A one-off run (`slipway run`, a queued run) of a process type with volumes mounts them at the
   * same paths as its instance, read-write and shared with it while both run: what a migration
   * or a maintenance script expects (Heroku-like); the stop-then-start rule is for two instances
   * of the long-running process, which could both write as owners. A release command's type has none.
   */
  private async oneOffMounts(plan: WorkloadPlan, processType: string) {
    const volumes = (plan.volumes ?? []).filter((v) => v.processType === processType);
    if (volumes.length === 0 || !this.volumes || !this.sandbox) return [];
    const uid = await this.sandbox.uidOf(plan.application.id);
    const mounts = [];
    for (const v of volumes) mounts.push({ source: await this.volumes.ensure({ id: v.id, sizeMiB: v.sizeMiB }, uid), target: v.mountPath });
    return mounts;
  }

  async rollout(plan: WorkloadPlan, log: RolloutLog, deadline: number, signal: AbortSignal): Promise<RolloutResult> {
    const artifactPath = this.artifactOf(plan);
    const { applicationId, environmentId } = { applicationId: plan.application.id, environmentId: plan.environment.id };
    const summary =
      Object.entries(plan.formation)
        .map(([t, n]) => `${t}=${n}`)
        .join(' ') || 'no long-running processes';
    await log.step('Deploy', `starting ${summary}`);
    this.checkVolumes(plan);
    if (plan.volumes?.length) await this.stopBeforeStart(plan, log);
    const specs = await this.withVolumes(
      plan,
      Object.entries(plan.formation).flatMap(([type, n]) =>
        Array.from({ length: n }, (_, i) => instanceSpec(plan, artifactPath, type, i + 1)),
      ),
      { idle: true },
    );
    const started = specs.map((s) => s.id);
    // The new instances' own output shows in the deployment log until traffic switches (bounded).
    const stopForwarding = this.forwardOutput(started, log);
    try {
      const launched = await this.runtimeService.launch(specs, plan.healthCheck);
      for (const s of launched)
        log.line(`Deploy: ${s.labels.processType}.${s.labels.ordinal} started${s.port ? ` on port ${s.port} (its PORT)` : ''}`);

      const healthSeconds = Math.min(plan.healthCheck.timeoutSeconds ?? plan.timeoutSeconds, plan.timeoutSeconds);
      const healthDeadline = Math.min(deadline, Date.now() + healthSeconds * 1000);
      await log.step('Rollout', `waiting for ${plan.healthCheck.path} to answer 2xx on every web instance (at most ${healthSeconds}s)`);
      const failed = await this.runtimeService.waitHealthy(started, healthDeadline, () => signal.aborted, { failOnCrash: true });
      if (signal.aborted) throw new RolloutFailure('Interrupted before the new release was healthy', 'interrupted');
      if (failed.length > 0) throw await this.startFailure(plan, failed, healthSeconds, healthDeadline >= deadline, log);

      const web = launched.filter((s) => isWeb(s.labels.processType)).map((s) => s.id);
      const previous = this.runtimeService.instancesOf(applicationId, environmentId).filter((s) => !started.includes(s.id));
      const window = plan.stabilitySeconds ?? 0;
      // With a previous release serving, traffic switches only once the window passed; a first release serves at once.
      let routed = false;
      const previousWeb = previous.filter((s) => isWeb(s.labels.processType) && s.port !== null).map((s) => s.id);
      const standBy = window > 0 && plan.switchBeforeWindow === true && previousWeb.length > 0;
      if (previous.length === 0 || window === 0 || standBy) {
        await this.runtimeService.publish(plan.hostname, web);
        routed = true;
        log.line(`Rollout: ${plan.hostname} now routes to ${web.length} web instance(s) of v${plan.release.version}`);
      }
      if (window > 0) {
        log.line(
          `Rollout: healthy; watching the new instances for ${window}s (stability window)${
            standBy ? '; the previous instances stand by' : routed ? '' : '; the previous release serves until then'
          }`,
        );
        const crashed = await this.runtimeService.watchStable(started, window * 1000, signal);
        // Switched early: a crash (or an interruption) in the window hands the traffic back to the previous instances.
        if (standBy && (crashed || signal.aborted)) {
          await this.runtimeService.publish(plan.hostname, previousWeb);
          log.line(`Rollout: ${plan.hostname} routes to the previous release again`);
          routed = false;
        }
        if (signal.aborted) throw new RolloutFailure('Interrupted during the stability window', 'interrupted');
        if (crashed) {
          const diagnosis = await this.runtimeService.diagnose(crashed.id, 'crashed_in_stability_window', plan.healthCheck.path);
          logDiagnosis(log, diagnosis);
          throw new RolloutFailure(
            diagnosis
              ? describeDiagnosis(diagnosis, { previousServes: !routed })
              : `${crashed.labels.processType}.${crashed.labels.ordinal} crashed in the stability window`,
            'crash_loop',
            diagnosis,
          );
        }
      }
      stopForwarding();
      if (!routed) {
        await this.runtimeService.publish(plan.hostname, web);
        log.line(`Rollout: ${plan.hostname} now routes to ${web.length} web instance(s) of v${plan.release.version}`);
      }
      if (previous.length > 0) {
        log.line(`Rollout: retiring ${previous.length} instance(s) of the previous release`);
        await this.runtimeService.retire(
          previous.map((s) => s.id),
          (line) => log.line(`Rollout: ${line}`),
        );
      }
      return {
        url: routeUrl(plan.hostname, this.router.port),
        instances: launched.map((s) => ({ process_type: s.labels.processType, ordinal: s.labels.ordinal, port: s.port })),
      };
    } catch (err) {
      stopForwarding();
      // Nothing of this rollout keeps running; the previous release was never unrouted.
      await this.runtimeService
        .retire(started.filter((id) => this.runtimeService.driver.status(id)))
        .catch((retireErr) => this.logger.warn({ err: retireErr }, 'retiring the instances of a failed rollout failed'));
      throw err;
    }
  }

  /** Copies the instances' output into the deployment log (`web.1 | …`), at most ROLLOUT_OUTPUT_LINES lines; returns the stop. */
  private forwardOutput(ids: string[], log: RolloutLog): () => void {
    const names = new Map<string, string>();
    let count = 0;
    return this.runtimeService.followOutput(new Set(ids), (o) => {
      if (count > ROLLOUT_OUTPUT_LINES) return;
      count++;
      const name = names.get(o.instanceId) ?? `${o.labels.processType}.${o.labels.ordinal}`;
      names.set(o.instanceId, name);
      log.line(count > ROLLOUT_OUTPUT_LINES ? `(more output of the new instances: \`slipway logs\`)` : `${name} | ${o.line}`);
    });
  }

  /** Why the new instances did not start: the first failed one's diagnosis, logged and thrown. */
  private async startFailure(plan: WorkloadPlan, failed: string[], healthSeconds: number, byDeployDeadline: boolean, log: RolloutLog) {
    const statuses = failed.map((id) => this.runtimeService.driver.status(id));
    const crashedId = failed.find((_, i) => crashedOrGone(statuses[i]));
    const id = crashedId ?? failed[0]!;
    const diagnosis = await this.runtimeService.diagnose(
      id,
      crashedId ? 'crashed_during_start' : 'health_check_timeout',
      plan.healthCheck.path,
    );
    logDiagnosis(log, diagnosis);
    const what = diagnosis
      ? describeDiagnosis(diagnosis, { seconds: healthSeconds })
      : failed.map((f) => describeFailure(this.runtimeService.driver.status(f), plan.healthCheck.path)).join('; ');
    // Instances whose wait only ended with the first crash are not failures of their own.
    const alike = failed.filter((f, i) => f !== id && (crashedId ? crashedOrGone(statuses[i]) : true));
    const others = alike.length > 0 ? ` (and ${alike.length} other instance(s))` : '';
    const prefix = !crashedId && byDeployDeadline ? `Deployment timed out after ${plan.timeoutSeconds}s: ` : '';
    return new RolloutFailure(`${prefix}${what}${others}`, rolloutFailureCode(statuses), diagnosis);
  }

  async reconcile(target: WorkloadTarget, plan: WorkloadPlan | null, signal: AbortSignal): Promise<void> {
    const { applicationId, environmentId } = target;
    // Instances a previous platform process left running: the serving deployment's are taken over, the rest end.
    const artifact = plan?.image.artifactPath && existsSync(plan.image.artifactPath) ? plan.image.artifactPath : null;
    const adopted = await this.runtimeService.adopt(
      applicationId,
      environmentId,
      plan && artifact ? plan.deploymentId : '',
      async ({ id, processType, ordinal }) =>
        plan && artifact && processType in plan.processes
          ? (await this.withVolumes(plan, [{ ...instanceSpec(plan, artifact, processType, ordinal), id }]))[0]!
          : null,
      plan?.healthCheck ?? { path: '/', host: null },
    );
    const running = this.runtimeService.instancesOf(applicationId, environmentId);
    if (!plan) {
      // Nothing should run (a deleted or stopped environment): its names stop answering too.
      const ids = running.map((s) => s.id);
      // Before the retirement's drain, so every edge stops routing to them first. A route write that fails (the
      // database away) still lets them be retired, then fails this reconcile (a failed job, said in its record).
      const unpublished = await this.runtimeService.unpublish(this.router.table.hostsRoutingTo(ids)).then(
        () => null,
        (err: unknown) => err,
      );
      await this.runtimeService.retire(ids);
      if (unpublished) throw unpublished;
      return;
    }
    if (!plan.image.artifactPath || !existsSync(plan.image.artifactPath)) {
      this.logger.warn(
        { applicationId, environmentId, deploymentId: plan.deploymentId },
        'the current release has no artifact on disk; its processes cannot run',
      );
      return;
    }
    // Instances of another deployment (a failed one, normally none) go; the current one's are resized.
    const stale = running.filter((s) => s.labels.deploymentId !== plan.deploymentId);
    const mine = running.filter((s) => s.labels.deploymentId === plan.deploymentId);
    const surplus: InstanceStatus[] = [];
    const specs = [];
    for (const [type, want] of Object.entries(plan.formation)) {
      const have = mine.filter((s) => s.labels.processType === type).sort((a, b) => a.labels.ordinal - b.labels.ordinal);
      if (have.length > want) surplus.push(...have.slice(want));
      for (const ordinal of freeOrdinals(have, Math.max(0, want - have.length))) {
        specs.push(instanceSpec(plan, plan.image.artifactPath, type, ordinal));
      }
    }
    // Process types the current release no longer has.
    surplus.push(...mine.filter((s) => !(s.labels.processType in plan.formation)));
    if (specs.length === 0 && surplus.length === 0 && stale.length === 0 && adopted.length === 0) return;

    const launched = await this.runtimeService.launch(await this.withVolumes(plan, specs), plan.healthCheck);
    // Adopted web instances rejoin their route once they answer their health check, as new ones do.
    const failed = new Set(
      await this.runtimeService.waitHealthy(
        [...launched, ...adopted.filter((s) => isWeb(s.labels.processType))].map((s) => s.id),
        Date.now() + plan.timeoutSeconds * 1000,
        () => signal.aborted,
      ),
    );
    for (const id of failed) {
      this.logger.warn(
        { applicationId, instance: describeFailure(this.runtimeService.driver.status(id), plan.healthCheck.path) },
        'new instance did not become healthy; stopped',
      );
    }
    await this.runtimeService.retire([...failed]);
    const leaving = new Set([...surplus, ...stale].map((s) => s.id));
    const web = this.runtimeService
      .instancesOf(applicationId, environmentId, plan.deploymentId)
      .filter((s) => isWeb(s.labels.processType) && !leaving.has(s.id) && !failed.has(s.id))
      .map((s) => s.id);
    // Web instances that come back after a restart join once healthy; crashed ones are skipped by the router.
    await this.runtimeService.publish(plan.hostname, web);
    await this.runtimeService.retire([...leaving]);
    this.logger.info(
      {
        applicationId,
        environmentId,
        counts: plan.formation,
        adopted: adopted.length,
        started: launched.length,
        failed: failed.size,
        stopped: leaving.size,
      },
      'instances reconciled',
    );
  }

  usage(): Promise<AppUsage[]> {
    return this.runtimeService.usage();
  }

  /** Instances this process runs for an application's environment (optionally one deployment). */
  instancesOf(applicationId: string, environmentId: string, deploymentId?: string): InstanceStatus[] {
    return this.runtimeService.instancesOf(applicationId, environmentId, deploymentId);
  }

  /** A process type with a volume runs one instance (one disk cannot be written by two); a runtime without a sandbox cannot bind one. */
  private checkVolumes(plan: WorkloadPlan) {
    const volumes = plan.volumes ?? [];
    if (volumes.length === 0) return;
    if (!this.sandbox || !this.volumes)
      throw new RolloutFailure('This application has volumes, and volumes need the sandbox (RUNTIME_ISOLATION=sandbox) on this machine');
    for (const v of volumes)
      if ((plan.formation[v.processType] ?? 0) > 1)
        throw new RolloutFailure(
          `Process type ${v.processType} is scaled to ${plan.formation[v.processType]}, but volume '${v.name}' can be mounted by one instance only: scale it to 1`,
        );
  }

  /**
   * Gives each instance the volumes of its process type: the disk made and mounted on this
   * machine, bound at the volume's path. `idle`: no instance uses the disks now (a stop-then-start
   * rollout), so one smaller than its recorded size is grown.
   */
  private async withVolumes(plan: WorkloadPlan, specs: InstanceSpec[], { idle = false } = {}): Promise<InstanceSpec[]> {
    const volumes = plan.volumes ?? [];
    if (volumes.length === 0) return specs;
    this.checkVolumes(plan);
    const uid = await this.sandbox!.uidOf(plan.application.id);
    const disks = this.volumes!;
    const out: InstanceSpec[] = [];
    for (const spec of specs) {
      const mounts = [];
      for (const v of volumes.filter((x) => x.processType === spec.labels.processType)) {
        const volume = { id: v.id, sizeMiB: v.sizeMiB };
        mounts.push({ source: idle ? await disks.ensureIdle(volume, uid) : await disks.ensure(volume, uid), target: v.mountPath });
      }
      out.push(mounts.length ? { ...spec, mounts } : spec);
    }
    return out;
  }

  /** Stop-then-start: the previous release's instances stop before the new ones mount the same disks. */
  private async stopBeforeStart(plan: WorkloadPlan, log: RolloutLog) {
    const previous = this.runtimeService.instancesOf(plan.application.id, plan.environment.id);
    const names = [...new Set(plan.volumes!.map((v) => `'${v.name}' (${v.processType})`))].join(', ');
    log.line(
      `Deploy: stop-then-start: volume(s) ${names} cannot be shared between the old and new instance, so ${previous.length} previous instance(s) stop first (requests fail until the new ones answer)`,
    );
    if (previous.length > 0) await this.runtimeService.retire(previous.map((s) => s.id));
  }

  private artifactOf(plan: WorkloadPlan): string {
    const path = plan.image.artifactPath;
    if (!path || !existsSync(path)) {
      throw new RolloutFailure(`The built artifact of image v${plan.image.version} is missing; build the application again`);
    }
    return path;
  }
}
