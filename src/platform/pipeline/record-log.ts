import { sql } from 'kysely';
import type { Db } from '../db/database.js';
import type { PipelineStep } from '../db/schema.js';
import { scrubber } from '../runtime/scrub.js';

export const BUILD_STEPS = ['Resolve', 'Build', 'Export', 'Push', 'Done'] as const;
export type BuildStepName = (typeof BUILD_STEPS)[number];

/** Above this a record's log keeps its beginning and says what was dropped. */
const MAX_LOG_CHARS = 2 * 1024 * 1024;
const FLUSH_MS = 250;
/**
 * Streams a build's (or release's) progress into its record: `log_text` grows as lines
 * arrive (batched every 250 ms), `build_step` follows the steps. Every line passes the
 * scrubber first, so secret values never reach the database.
 */
export class RecordLog {
  private pending = '';
  private written = 0;
  private truncated = false;
  private step: PipelineStep = { steps: [...BUILD_STEPS], current: 0 };
  private stepDirty = false;
  private timer: NodeJS.Timeout | null = null;
  private chain: Promise<void> = Promise.resolve();
  /** Hides secret values in any text bound for the record (e.g. an error_detail). */
  readonly scrub: (text: string) => string;

  constructor(
    private readonly db: Db,
    private readonly table: 'images' | 'releases',
    private readonly id: string,
    secrets: string[],
  ) {
    this.scrub = scrubber(secrets);
  }

  line(text: string): void {
    if (this.truncated) return;
    const clean = this.scrub(text);
    if (this.written + this.pending.length + clean.length > MAX_LOG_CHARS) {
      this.pending += `[log truncated at ${MAX_LOG_CHARS} characters]\n`;
      this.truncated = true;
    } else {
      this.pending += `${clean}\n`;
    }
    this.schedule();
  }

  /** Moves to a step (by name) and logs it as a heading. */
  enter(name: BuildStepName): void {
    this.step = { steps: [...BUILD_STEPS], current: BUILD_STEPS.indexOf(name) };
    this.stepDirty = true;
    this.line(`----- ${name}`);
  }

  substep(progress: string): void {
    this.step = { ...this.step, substep: progress };
    this.stepDirty = true;
    this.schedule();
  }

  /** Writes everything buffered; resolves once it is stored. */
  flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    const text = this.pending;
    const step = this.stepDirty ? this.step : null;
    this.pending = '';
    this.stepDirty = false;
    if (!text && !step) return this.chain;
    this.written += text.length;
    this.chain = this.chain
      .then(async () => {
        const set: Record<string, unknown> = { updated_at: sql`now()` };
        if (text) set.log_text = sql`log_text || ${text}`;
        if (step) set.build_step = JSON.stringify(step);
        await this.db.updateTable(this.table).set(set).where('id', '=', this.id).execute();
      })
      .catch(() => {
        /* a lost log write must not fail the build; the outcome is written separately */
      });
    return this.chain;
  }

  private schedule() {
    if (!this.timer) this.timer = setTimeout(() => void this.flush(), FLUSH_MS);
  }
}
