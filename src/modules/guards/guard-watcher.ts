import type { Db } from '../../platform/db/database.js';
import type { DeploymentGuardsTable } from '../../platform/db/schema.js';
import type { RuntimeLogger } from '../../platform/runtime/application-runtime.js';
import type { Selectable } from 'kysely';
import type { DeploymentsService } from '../../pipeline/index.js';
import { breachOf, countsSince, measure, type GuardBreach } from './guard-verdict.js';
import { GuardsRepository } from './guards.repository.js';

type Watch = Selectable<DeploymentGuardsTable>;

export type AlertFiredSince = (applicationId: string, environmentId: string, since: Date) => Promise<string | null>;

/**
 * Judges every deployment under watch each `intervalMs`. A watch is a row (started by a trigger
 * when a guarded deployment completes), not a pipeline job: a job would hold the application's
 * queue for the whole window and delay the very rollback it may need. Any number of processes
 * may run this loop; a verdict is a conditional update, so one of them acts on it.
 */
export class GuardWatcher {
  private readonly repo: GuardsRepository;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> = Promise.resolve();

  constructor(
    db: Db,
    repo: GuardsRepository,
    private readonly deployments: DeploymentsService,
    private readonly intervalMs: number,
    private readonly logger: RuntimeLogger,
    /** An alert rule of the environment that fired since a time (its name), or null: a regression too (issue 33). */
    private readonly alertFiredSince: AlertFiredSince | null = null,
  ) {
    this.repo = repo;
  }

  start() {
    if (this.timer) return;
    this.timer = setInterval(() => {
      this.running = this.running.then(() => this.checkAll()).catch((err) => this.logger.error({ err }, 'guard check failed'));
    }, this.intervalMs);
    this.timer.unref();
  }

  async stop() {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  async checkAll(): Promise<void> {
    for (const watch of await this.repo.watching()) await this.check(watch);
  }

  private async alertBreach(app: string, env: string, since: Date): Promise<GuardBreach | null> {
    const rule = this.alertFiredSince ? await this.alertFiredSince(app, env, since) : null;
    return rule ? { measure: 'alert', value: 1, threshold: 0, detail: `alert rule ${rule} fired during the watch` } : null;
  }

  private async check(watch: Watch): Promise<void> {
    const { deployment_id: id, application_id: app, environment_id: env } = watch;
    if (await this.repo.superseded(id, app, env)) {
      await this.repo.settle(id, 'superseded', null);
      return;
    }
    const window = countsSince(await this.repo.countsSince(app, env, watch.started_at), watch.start_counts);
    const measures = measure(window, watch.baseline_counts, await this.repo.restarts(id), watch.settings);
    const breach = breachOf(measures, watch.settings) ?? (await this.alertBreach(app, env, watch.started_at));
    if (breach) {
      if (!(await this.repo.settle(id, 'breached', measures, breach.detail))) return;
      this.logger.warn({ deploymentId: id, breach }, 'guard breached: rolling back');
      const rollbackId = await this.deployments.rollBackBreached(id, { ...breach, measures });
      if (rollbackId) await this.repo.rolledBackBy(id, rollbackId);
    } else if (Date.now() >= watch.watch_until.getTime()) {
      await this.repo.settle(id, 'passed', measures);
    } else {
      await this.repo.recordMeasures(id, measures);
    }
  }
}
