import { existsSync } from 'node:fs';
import type { AppContext } from '../../platform/context.js';
import type { RuntimeLogger, RuntimeService } from '../../platform/runtime/runtime.service.js';
import type { InstanceStatus } from '../../platform/runtime/port.js';
import { effectiveProcessSettings } from '../environments/process-settings.js';
import { DeploymentsRepository } from './deployments.repository.js';
import { describeFailure, freeOrdinals, instanceSpec, isWeb, routeHostname } from './instance-plan.js';
import { formation, releaseRuntime } from './release-runtime.js';

/**
 * Makes the running instances of an application's environment match its current
 * deployment and process counts: after a scale (no new release) and after a platform
 * restart (processes come back). Runs as a pipeline job, so it never races a deployment.
 */
export class FormationReconciler {
  private readonly repo: DeploymentsRepository;

  constructor(private readonly ctx: AppContext, private readonly runtime: RuntimeService, private readonly logger: RuntimeLogger) {
    this.repo = new DeploymentsRepository(ctx.db);
  }

  async reconcile(applicationId: string, environmentId: string, signal: AbortSignal): Promise<void> {
    const current = await this.repo.current(applicationId, environmentId);
    const target = await this.repo.target(applicationId, environmentId);
    const running = this.runtime.instancesOf(applicationId, environmentId);
    if (!current || !target) {
      await this.runtime.retire(running.map((s) => s.id));
      return;
    }
    const release = await this.repo.release(current.release_id);
    const image = release?.image_ref ? await this.repo.image(release.image_ref) : undefined;
    if (!release || !image?.artifact_path || !existsSync(image.artifact_path)) {
      this.logger.warn({ applicationId, environmentId, deploymentId: current.id }, 'the current release has no artifact on disk; its processes cannot run');
      return;
    }
    const rt = releaseRuntime(this.ctx.secrets, release, image);
    const settings = await effectiveProcessSettings(this.ctx.db, applicationId, environmentId);
    const counts = formation(rt.processes, settings.process_counts);
    const hostname = routeHostname(target, this.ctx.config.ROUTER_DOMAIN);

    // Instances of an older deployment (none normally) go; the current one's are resized.
    const stale = running.filter((s) => s.labels.deploymentId !== current.id);
    const mine = running.filter((s) => s.labels.deploymentId === current.id);
    const surplus: InstanceStatus[] = [];
    const specs = [];
    for (const [type, want] of Object.entries(counts)) {
      const have = mine.filter((s) => s.labels.processType === type).sort((a, b) => a.labels.ordinal - b.labels.ordinal);
      if (have.length > want) surplus.push(...have.slice(want));
      for (const ordinal of freeOrdinals(have, Math.max(0, want - have.length))) {
        specs.push(instanceSpec(rt, target, current.id, type, ordinal, settings.process_pod_classes));
      }
    }
    // Process types the current release no longer has.
    surplus.push(...mine.filter((s) => !(s.labels.processType in counts)));
    if (specs.length === 0 && surplus.length === 0 && stale.length === 0) return;

    const launched = await this.runtime.launch(specs, { path: rt.healthCheckPath, host: rt.healthCheckHost });
    const failed = new Set(await this.runtime.waitHealthy(launched.map((s) => s.id), Date.now() + rt.timeoutSeconds * 1000, () => signal.aborted));
    for (const id of failed) {
      this.logger.warn({ applicationId, instance: describeFailure(this.runtime.driver.status(id), rt.healthCheckPath) }, 'new instance did not become healthy; stopped');
    }
    await this.runtime.retire([...failed]);
    const leaving = new Set([...surplus, ...stale].map((s) => s.id));
    const web = this.runtime.instancesOf(applicationId, environmentId, current.id)
      .filter((s) => isWeb(s.labels.processType) && !leaving.has(s.id) && !failed.has(s.id))
      .map((s) => s.id);
    // Web instances that come back after a restart join once healthy; crashed ones are skipped by the router.
    this.runtime.publish(hostname, web);
    await this.runtime.retire([...leaving]);
    this.logger.info({ applicationId, environmentId, counts, started: launched.length - failed.size, stopped: leaving.size }, 'instances reconciled');
  }
}
