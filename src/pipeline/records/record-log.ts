import { sql } from 'kysely';
import type { Db } from '../../platform/db/database.js';
import type { PipelineStep } from '../../platform/db/schema.js';
import { scrubber } from '../../platform/runtime/scrub.js';
import { BufferedLog, storable, tapRecordLog, type LogWriteFailureLogger } from '../../platform/logs/index.js';

export const BUILD_STEPS = ['Resolve', 'Build', 'Export', 'Push', 'Done'] as const;
export type BuildStepName = (typeof BUILD_STEPS)[number];

/**
 * Streams a build's (or release's) progress into its record: `log_text` grows as lines
 * arrive (batched every 250 ms by the shared {@link BufferedLog}), `build_step` follows the
 * steps. Every line passes the scrubber first, so secret values never reach the database.
 */
export class RecordLog {
  private step: PipelineStep = { steps: [...BUILD_STEPS], current: 0 };
  private stepDirty = false;
  /** Steps' headings say when they began, so a record's time splits into its steps. */
  private readonly started = Date.now();
  private readonly log: BufferedLog;
  /** Hides secret values in any text bound for the record (e.g. an error_detail), and makes it storable as text. */
  readonly scrub: (text: string) => string;

  constructor(
    private readonly db: Db,
    private readonly table: 'images' | 'releases',
    private readonly id: string,
    secrets: string[],
    logger?: LogWriteFailureLogger,
  ) {
    const hide = scrubber(secrets);
    this.scrub = (text) => storable(hide(text));
    this.log = new BufferedLog({
      append: (text) => this.write(text),
      hasOtherChanges: () => this.stepDirty,
      logger,
      label: `${table} ${id}`,
    });
  }

  /** Returns false once the log is full (later lines are dropped; see BufferedLog). */
  line(text: string): boolean {
    return this.log.line(this.scrub(text));
  }

  /** Moves to a step (by name) and logs it as a heading: `heading` when the step means something else here (a release builds nothing). */
  enter(name: BuildStepName, heading: string = name): void {
    this.step = { steps: [...BUILD_STEPS], current: BUILD_STEPS.indexOf(name) };
    this.stepDirty = true;
    this.line(`----- ${heading} (at ${this.elapsed()})`);
  }

  /** Time since the record's log began, as shown in its headings ("12.3 s"). */
  elapsed(): string {
    return `${((Date.now() - this.started) / 1000).toFixed(1)} s`;
  }

  substep(progress: string): void {
    this.step = { ...this.step, substep: progress };
    this.stepDirty = true;
    this.log.schedule();
  }

  /** Writes everything buffered; resolves once it is stored (or once a failed write was logged and kept for a retry). */
  flush(): Promise<void> {
    return this.log.flush();
  }

  private async write(text: string): Promise<void> {
    const step = this.stepDirty ? this.step : null;
    this.stepDirty = false;
    const set: Record<string, unknown> = { updated_at: sql`now()` };
    if (text) set.log_text = sql`log_text || ${text}`;
    if (step) set.build_step = JSON.stringify(step);
    try {
      await this.db.updateTable(this.table).set(set).where('id', '=', this.id).execute();
    } catch (err) {
      if (step) this.stepDirty = true;
      throw err;
    }
    tapRecordLog({ table: this.table, recordId: this.id, text });
  }
}
