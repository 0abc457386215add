import { sql } from 'kysely';
import type { Db } from '../../platform/db/database.js';
import type { ApplicationRuntime, AppUsage, RuntimeLogger } from '../../platform/runtime/application-runtime.js';

/** Samples older than this are deleted (decisions.md: kept 30 days). */
const RETENTION_DAYS = 30;
const PRUNE_EVERY_MS = 60 * 60 * 1000;

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
    if (usage.length > 0) {
      const inserted = await this.db
        .insertInto('metric_samples')
        .values(
          usage.map((u) => ({
            application_id: u.applicationId,
            environment_id: u.environmentId,
            sampled_at: at,
            cpu_usage_m: u.cpuMillicores,
            memory_usage_bytes: u.memoryBytes,
            pod_count: u.podCount,
            restart_count: u.restartCount,
          })),
        )
        .onConflict((oc) => oc.doNothing())
        .returning(['application_id', 'environment_id'])
        .execute();
      const mine = new Set(inserted.map((r) => `${r.application_id}/${r.environment_id}`));
      stored = usage.filter((u) => mine.has(`${u.applicationId}/${u.environmentId}`));
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
}
