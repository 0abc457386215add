import type { RuntimeLogger } from '../../platform/runtime/application-runtime.js';
import type { Db } from '../../platform/db/database.js';
import type { OneOffRunsService } from '../../pipeline/index.js';
import { nextOccurrence } from '../../platform/cron/schedule.js';
import { CronRepository } from './cron.repository.js';

const BATCH = 100;

/**
 * Starts the runs of due cron entries, in every process that runs pipeline workers; safe
 * with several: each occurrence is taken by one (compare-and-set on `next_run_at`) and has
 * at most one run (unique per entry and occurrence). The next occurrence is always counted
 * from now, so a platform that was down runs a missed entry once when it comes back (one
 * catch-up), never once per missed occurrence.
 */
export class CronScheduler {
  private readonly repo: CronRepository;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> = Promise.resolve();
  private busy = false;

  constructor(
    db: Db,
    repo: CronRepository,
    private readonly runs: OneOffRunsService,
    private readonly options: { pollMs: number; allowSeconds: boolean },
    private readonly logger: RuntimeLogger,
  ) {
    this.repo = repo;
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      // A slow tick is not stacked upon: the next one starts on the first beat after it.
      if (this.busy) return;
      this.busy = true;
      this.running = this.tick()
        .then(
          () => {},
          (err) => this.logger.error({ err }, 'cron scheduling failed'),
        )
        .finally(() => {
          this.busy = false;
        });
    }, this.options.pollMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  /** Takes the due occurrences and queues their runs; returns how many runs it queued. */
  async tick(): Promise<number> {
    let started = 0;
    const now = await this.repo.now();
    for (const entry of await this.repo.due(BATCH)) {
      let next: Date;
      try {
        next = nextOccurrence(entry.schedule, now, this.options.allowSeconds);
      } catch (err) {
        // Only a slipway.json entry can hold a bad schedule (the API refuses them): it waits for the next deployment.
        this.logger.warn({ err, cronEntryId: entry.id, schedule: entry.schedule }, 'cron entry has an invalid schedule');
        await this.repo.advance(entry.id, entry.next_run_at, new Date('9999-12-31T00:00:00Z'));
        continue;
      }
      if (!(await this.repo.advance(entry.id, entry.next_run_at, next))) continue;
      // A new or changed schedule only learns its next occurrence here.
      if (entry.next_run_at === null) continue;
      try {
        const outcome = await this.runs.createScheduled({ ...entry, scheduled_for: entry.next_run_at });
        if ('run' in outcome) started++;
        else this.logger.info({ cronEntryId: entry.id, name: entry.name, reason: outcome.skipped }, 'cron occurrence skipped');
      } catch (err) {
        this.logger.error({ err, cronEntryId: entry.id, name: entry.name }, 'cron run could not start');
      }
    }
    return started;
  }
}
