import { sql } from 'kysely';
import type { Db } from '../../platform/db/database.js';
import type { ApplicationRuntime, AppUsage, RuntimeLogger } from '../../platform/runtime/application-runtime.js';

/** Samples older than this are deleted (decisions.md: kept 30 days). */
const RETENTION_DAYS = 30;
const PRUNE_EVERY_MS = 60 * 60 * 1000;
const FOREIGN_KEY_VIOLATION = '23503';

/**
 * Records the runtime's CPU, memory, instance and restart counts per application
 * environment every interval (one minute by default) into `metric_samples`.
 */
export class MetricsSampler {
  private timer: NodeJS.Timeout | null = null;
  private lastPrune = 0;
  private running: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Db,
    private readonly runtime: ApplicationRuntime,
    private readonly intervalSeconds: number,
    private readonly logger: RuntimeLogger,
    /** Told every sample this process stored (the autoscaler evaluates it). */
    private readonly listeners: ReadonlyArray<(usage: AppUsage[], sampledAt: Date) => Promise<unknown>> = [],
  ) {}

  start() {
    if (this.timer) return;
    this.timer = setInterval(() => {
      this.running = this.sampleOnce().then(
        () => {},
        (err) => this.logger.error({ err }, 'metrics sample failed'),
      );
    }, this.intervalSeconds * 1000);
    this.timer.unref();
  }

  async stop() {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  async sampleOnce(now = new Date()): Promise<number> {
    // Every worker sees a cluster's pods: aligned to the interval, their samples are one row (the first wins).
    const at = this.runtime.sharedWorkloads
      ? new Date(Math.floor(now.getTime() / (this.intervalSeconds * 1000)) * this.intervalSeconds * 1000)
      : now;
    const usage = await this.runtime.usage();
    let stored: AppUsage[] = [];
    const present = await this.stillPresent(usage);
    if (present.length > 0) {
      const inserted = await this.db
        .insertInto('metric_samples')
        .values(
          present.map((u) => ({
            application_id: u.applicationId,
            environment_id: u.environmentId,
            sampled_at: at,
            cpu_usage_m: u.cpuMillicores,
            memory_usage_bytes: u.memoryBytes,
            pod_count: u.podCount,
            restart_count: u.restartCount,
            memory_percent_max: u.memoryPercentMax ?? null,
          })),
        )
        .onConflict((oc) => oc.doNothing())
        .returning(['application_id', 'environment_id'])
        .execute()
        .catch((err: unknown) => {
          // Deleted between the check and the insert: a normal outcome, the next sample does without it.
          if ((err as { code?: string }).code !== FOREIGN_KEY_VIOLATION) throw err;
          this.logger.debug?.({ err }, 'metrics sample skipped: an application or environment was deleted meanwhile');
          return [];
        });
      const mine = new Set(inserted.map((r) => `${r.application_id}/${r.environment_id}`));
      stored = present.filter((u) => mine.has(`${u.applicationId}/${u.environmentId}`));
    }
    // Only the samples this process stored: on a cluster, the worker whose sample won acts on it.
    for (const listener of this.listeners) {
      await listener(stored, at).catch((err) => this.logger.error({ err }, 'a metrics sample listener failed'));
    }
    if (Date.now() - this.lastPrune > PRUNE_EVERY_MS) {
      this.lastPrune = Date.now();
      await this.db
        .deleteFrom('metric_samples')
        .where('sampled_at', '<', sql<Date>`now() - make_interval(days => ${RETENTION_DAYS})`)
        .execute();
    }
    return usage.length;
  }

  /**
   * The readings of applications and environments that still exist. An instance outlives its
   * application's row for a moment when the application or environment is deleted (its processes
   * stop after): that reading is dropped, at debug level, and never fails the others' samples.
   */
  private async stillPresent(usage: AppUsage[]): Promise<AppUsage[]> {
    if (usage.length === 0) return [];
    const [apps, envs] = await Promise.all([
      this.db
        .selectFrom('applications')
        .select('id')
        .where('id', 'in', [...new Set(usage.map((u) => u.applicationId))])
        .execute(),
      this.db
        .selectFrom('environments')
        .select('id')
        .where('id', 'in', [...new Set(usage.map((u) => u.environmentId))])
        .execute(),
    ]);
    const appIds = new Set(apps.map((r) => r.id));
    const envIds = new Set(envs.map((r) => r.id));
    const present = usage.filter((u) => appIds.has(u.applicationId) && envIds.has(u.environmentId));
    for (const gone of usage.filter((u) => !present.includes(u)))
      this.logger.debug?.(
        { application: gone.applicationId, environment: gone.environmentId },
        'metrics sample skipped: its application or environment is deleted (its instances are stopping)',
      );
    return present;
  }
}
