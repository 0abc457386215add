import { existsSync } from 'node:fs';
import type { AppContext } from '../../platform/context.js';
import type { RuntimeService } from '../../platform/runtime/runtime.service.js';
import { effectiveProcessSettings } from '../environments/process-settings.js';
import { DeploymentsRepository, stepOf, type DeployStepName } from './deployments.repository.js';
import { describeFailure, instanceSpec, isWeb, routeHostname, routeUrl } from './instance-plan.js';
import { formation, processEnv, releaseRuntime, type ReleaseRuntime } from './release-runtime.js';

/** A deployment failing for a reason worth showing as its `error_detail`. */
class DeployFailure extends Error {}

/** Above this a deployment's log keeps its beginning (a chatty release command cannot fill the database). */
const MAX_LOG_CHARS = 2 * 1024 * 1024;

/** Buffers log lines and writes them in batches (a chatty release command is one UPDATE per 100 ms). */
class DeployLog {
  private buffer = '';
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> = Promise.resolve();
  private size = 0;

  constructor(private readonly repo: DeploymentsRepository, private readonly id: string) {}

  line(text: string) {
    if (this.size > MAX_LOG_CHARS) return;
    const entry = `${new Date().toISOString()} ${text}\n`;
    this.size += entry.length;
    this.buffer += this.size > MAX_LOG_CHARS ? `[log truncated at ${MAX_LOG_CHARS} characters]\n` : entry;
    this.timer ??= setTimeout(() => { this.timer = null; void this.flush(); }, 100);
  }

  flush(): Promise<void> {
    if (this.timer) { clearTimeout(this.timer); this.timer = null; }
    const text = this.buffer;
    this.buffer = '';
    if (text) this.writing = this.writing.then(() => this.repo.appendLog(this.id, text).then(() => {}, () => {}));
    return this.writing;
  }
}

export const INTERRUPTED_DETAIL = 'Interrupted by a restart of the platform before it finished; the previous release keeps serving';

/**
 * Runs one deployment through Setup, Release, Deploy, Rollout, Done. The previous
 * release's instances are untouched until every new web instance is healthy; then the
 * route switches in one step and the old instances drain and stop. Any failure (release
 * command, timeout, shutdown) stops the new instances and leaves the old ones serving.
 */
export class DeployRunner {
  private readonly repo: DeploymentsRepository;

  constructor(private readonly ctx: AppContext, private readonly runtime: RuntimeService) {
    this.repo = new DeploymentsRepository(ctx.db);
  }

  async run(deploymentId: string, jobId: string | null, signal: AbortSignal): Promise<void> {
    const deployment = await this.repo.findById(deploymentId);
    if (!deployment || deployment.status !== 'queued') return; // settled already (e.g. after a restart)
    const log = new DeployLog(this.repo, deploymentId);
    const step = async (name: DeployStepName, message: string) => {
      log.line(`${name}: ${message}`);
      await log.flush();
      await this.repo.update(deploymentId, { deploy_step: JSON.stringify(stepOf(name)) });
    };
    const started: string[] = [];
    try {
      await this.repo.update(deploymentId, { status: 'deploying', started_at: new Date(), job_id: jobId });
      const release = await this.repo.release(deployment.release_id);
      if (!release) throw new DeployFailure('The release no longer exists');
      await step('Setup', `deploying release v${release.version}`);
      if (!release.built) {
        throw new DeployFailure(`Release v${release.version} is not built (${release.status}${release.error_detail ? `: ${release.error_detail}` : ''})`);
      }
      const image = release.image_ref ? await this.repo.image(release.image_ref) : undefined;
      if (!image) throw new DeployFailure(`Release v${release.version} has no image`);
      if (!image.artifact_path || !existsSync(image.artifact_path)) {
        throw new DeployFailure(`The built artifact of image v${image.version} is missing; build the application again`);
      }
      const rt = releaseRuntime(this.ctx.secrets, release, image);
      const target = await this.repo.target(deployment.application_id, deployment.environment_id);
      if (!target) throw new DeployFailure('The application or its environment no longer exists');
      const deadline = Date.now() + rt.timeoutSeconds * 1000;
      const timeoutDetail = (what: string) => `Deployment timed out after ${rt.timeoutSeconds}s: ${what}`;
      const aborted = () => signal.aborted;

      // Release: the one-off `release` command; its failure fails the deployment.
      if (rt.processes.release) {
        await step('Release', `running release command: ${rt.processes.release.cmd}`);
        const result = await this.runtime.driver.runOnce({
          command: rt.processes.release.cmd, artifactPath: rt.artifactPath, env: processEnv(rt, 'release'), secrets: rt.secrets,
          timeoutMs: Math.max(1, deadline - Date.now()), signal, onOutput: (l) => log.line(`release | ${l}`),
        });
        await log.flush();
        if (aborted()) throw new DeployFailure(INTERRUPTED_DETAIL);
        if (result.timedOut) throw new DeployFailure(timeoutDetail('the release command did not finish'));
        if (result.exitCode !== 0) {
          throw new DeployFailure(`The release command failed (${result.signal ? `signal ${result.signal}` : `exit code ${result.exitCode}`})`);
        }
      } else {
        await step('Release', 'no release command in the Procfile');
      }

      // Deploy: start every process type's instances beside the previous release's.
      const settings = await effectiveProcessSettings(this.ctx.db, target.applicationId, target.environmentId);
      const counts = formation(rt.processes, settings.process_counts);
      const summary = Object.entries(counts).map(([t, n]) => `${t}=${n}`).join(' ') || 'no long-running processes';
      await step('Deploy', `starting ${summary}`);
      const specs = Object.entries(counts).flatMap(([type, n]) =>
        Array.from({ length: n }, (_, i) => instanceSpec(rt, target, deploymentId, type, i + 1, settings.process_pod_classes)));
      for (const spec of specs) started.push(spec.id);
      const launched = await this.runtime.launch(specs, { path: rt.healthCheckPath, host: rt.healthCheckHost });
      for (const s of launched) log.line(`Deploy: ${s.labels.processType}.${s.labels.ordinal} started${s.port ? ` on port ${s.port}` : ''}`);

      // Rollout: wait for health, switch the route, retire the previous instances.
      await step('Rollout', `waiting for ${rt.healthCheckPath} to answer 2xx on every web instance`);
      const failed = await this.runtime.waitHealthy(started, deadline, aborted);
      if (aborted()) throw new DeployFailure(INTERRUPTED_DETAIL);
      if (failed.length > 0) {
        const what = failed.map((id) => describeFailure(this.runtime.driver.status(id), rt.healthCheckPath)).join('; ');
        // Web instances fail only at the deadline; other processes fail as soon as they crash.
        throw new DeployFailure(Date.now() >= deadline ? timeoutDetail(what) : `Deployment failed: ${what}`);
      }
      const hostname = routeHostname(target, this.ctx.config.ROUTER_DOMAIN);
      const web = launched.filter((s) => isWeb(s.labels.processType)).map((s) => s.id);
      const previous = this.runtime.instancesOf(target.applicationId, target.environmentId).filter((s) => !started.includes(s.id));
      this.runtime.publish(hostname, web);
      log.line(`Rollout: ${hostname} now routes to ${web.length} web instance(s) of v${rt.version}`);
      if (previous.length > 0) {
        log.line(`Rollout: retiring ${previous.length} instance(s) of the previous release`);
        await this.runtime.retire(previous.map((s) => s.id));
      }
      const url = routeUrl(hostname, this.runtime.router.port);
      await this.repo.update(deploymentId, {
        deploy_metadata: JSON.stringify({
          url, hostname, release_version: rt.version, commit_sha: release.commit_sha, process_counts: counts,
          instances: launched.map((s) => ({ process_type: s.labels.processType, ordinal: s.labels.ordinal, port: s.port })),
        }),
      });

      // Done: `postdeploy` runs once the new release serves; its failure is logged, not fatal.
      if (rt.processes.postdeploy) {
        await step('Done', `running postdeploy command: ${rt.processes.postdeploy.cmd}`);
        const result = await this.runtime.driver.runOnce({
          command: rt.processes.postdeploy.cmd, artifactPath: rt.artifactPath, env: processEnv(rt, 'postdeploy'), secrets: rt.secrets,
          timeoutMs: Math.max(30_000, deadline - Date.now()), signal, onOutput: (l) => log.line(`postdeploy | ${l}`),
        });
        if (result.exitCode !== 0) {
          log.line(`postdeploy failed (${result.timedOut ? 'timed out' : result.signal ? `signal ${result.signal}` : `exit code ${result.exitCode}`}); the new release is serving`);
        }
      } else {
        await step('Done', 'no postdeploy command in the Procfile');
      }
      log.line(`deployment complete: ${url}`);
      await log.flush();
      await this.repo.update(deploymentId, { status: 'complete', complete: true, error: false, finished_at: new Date(), deploy_step: JSON.stringify(stepOf('Done')) });
    } catch (err) {
      await log.flush();
      // Nothing of this deployment may keep running; the previous release was never unrouted.
      await this.runtime.retire(started.filter((id) => this.runtime.driver.status(id))).catch(() => {});
      const detail = err instanceof DeployFailure ? err.message : `Deployment failed: ${err instanceof Error ? err.message : String(err)}`;
      await this.repo.failIfUnfinished(deploymentId, detail);
      if (!(err instanceof DeployFailure)) throw err;
    }
  }
}

export type { ReleaseRuntime };
