import type { Db } from '../../platform/db/database.js';
import { storableText } from '../../platform/logs/index.js';
import type { AppOutputLine, RuntimeLogger } from '../../platform/runtime/application-runtime.js';
import { AppLogsRepository, type NewLogLine } from './app-logs.repository.js';

const FLUSH_MS = 250;
/** Lines held in memory at most while the database is slow; beyond, lines are counted and dropped. */
const MAX_PENDING = 20_000;
/** Longest stored line (a line without a newline for megabytes is cut). */
const MAX_LINE_CHARS = 16 * 1024;

export interface AppLogWriterOptions {
  maxBytesPerApp: number;
  logger: RuntimeLogger;
  /** Extra scrubbing for runtimes whose output does not pass the release's scrubber (a cluster's pod logs). */
  scrub?: (line: AppOutputLine) => Promise<string> | string;
  /** With several workers following one cluster, only one of them may store its lines. */
  shouldStore?: () => boolean;
}

/**
 * Stores the output of the instances this process runs, in batches (one transaction per
 * 250 ms), and rotates an application's lines as soon as it wrote a quarter of its size
 * limit since the last rotation (a chatty app cannot outgrow the limit between sweeps).
 */
export class AppLogWriter {
  private pending: NewLogLine[] = [];
  private dropped = new Map<string, { line: NewLogLine; count: number }>();
  /** Per instance: lines whose NUL bytes or broken characters were replaced since the last flush. */
  private escaped = new Map<string, { line: NewLogLine; count: number }>();
  private timer: NodeJS.Timeout | null = null;
  private chain: Promise<void> = Promise.resolve();
  private readonly written = new Map<string, number>();
  private readonly repo: AppLogsRepository;

  constructor(
    db: Db,
    repo: AppLogsRepository,
    private readonly options: AppLogWriterOptions,
  ) {
    this.repo = repo;
  }

  accept(out: AppOutputLine): void {
    if (this.options.shouldStore && !this.options.shouldStore()) return;
    if (this.options.scrub) {
      void Promise.resolve(this.options.scrub(out)).then(
        (line) => this.add({ ...out, line }),
        (err) => this.options.logger.warn({ err }, 'an application log line could not be scrubbed; not stored'),
      );
    } else {
      this.add(out);
    }
  }

  private add(out: AppOutputLine) {
    // A byte PostgreSQL text cannot hold would fail the whole batch, every organization's lines with it.
    const { text, replaced } = storableText(out.line.slice(0, MAX_LINE_CHARS));
    const row: NewLogLine = {
      application_id: out.applicationId,
      environment_id: out.environmentId,
      instance_id: out.instanceId,
      process_type: out.processType,
      stream: out.stream,
      line: text,
      logged_at: out.at,
    };
    if (replaced) {
      const e = this.escaped.get(out.instanceId);
      this.escaped.set(out.instanceId, { line: row, count: (e?.count ?? 0) + 1 });
    }
    if (this.pending.length >= MAX_PENDING) {
      const d = this.dropped.get(out.instanceId);
      this.dropped.set(out.instanceId, { line: row, count: (d?.count ?? 0) + 1 });
    } else {
      this.pending.push(row);
    }
    this.timer ??= setTimeout(() => {
      this.timer = null;
      void this.flush();
    }, FLUSH_MS);
  }

  flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    const batch = this.pending;
    for (const { line, count } of this.dropped.values())
      batch.push({ ...line, stream: 'stderr', line: `[slipway: ${count} lines dropped: the log store fell behind]` });
    for (const { line, count } of this.escaped.values())
      batch.push({ ...line, stream: 'stderr', line: `[slipway: ${count} lines had NUL bytes or broken characters, stored as U+FFFD]` });
    this.pending = [];
    this.dropped = new Map();
    this.escaped = new Map();
    if (batch.length === 0) return this.chain;
    this.chain = this.chain.then(async () => {
      const stored = await this.insertIsolated(batch);
      if (stored.length > 0) await this.rotateChatty(stored);
    });
    return this.chain;
  }

  /**
   * One transaction for the batch; when it fails, each application's lines again on their own,
   * so one application's bad lines never cost another's. Returns the lines stored.
   */
  private async insertIsolated(batch: NewLogLine[]): Promise<NewLogLine[]> {
    try {
      await this.repo.insert(batch);
      return batch;
    } catch (err) {
      const byApp = new Map<string, NewLogLine[]>();
      for (const l of batch) {
        const lines = byApp.get(l.application_id);
        if (lines) lines.push(l);
        else byApp.set(l.application_id, [l]);
      }
      if (byApp.size === 1) {
        this.options.logger.warn(
          { err, lines: batch.length, applicationId: batch[0]!.application_id },
          'storing application log lines failed',
        );
        return [];
      }
      const stored: NewLogLine[] = [];
      for (const [applicationId, lines] of byApp) {
        try {
          await this.repo.insert(lines);
          stored.push(...lines);
        } catch (appErr) {
          this.options.logger.warn({ err: appErr, lines: lines.length, applicationId }, 'storing application log lines failed');
        }
      }
      return stored;
    }
  }

  private async rotateChatty(batch: NewLogLine[]) {
    for (const l of batch) this.written.set(l.application_id, (this.written.get(l.application_id) ?? 0) + l.line.length + 100);
    for (const [app, bytes] of this.written) {
      if (bytes < this.options.maxBytesPerApp / 4) continue;
      this.written.set(app, 0);
      await this.repo
        .trimToSize(app, this.options.maxBytesPerApp)
        .catch((err) => this.options.logger.warn({ err }, 'rotating application logs failed'));
    }
  }
}

/** The sweep every worker runs: age limit for everyone, size limit per application. */
export async function sweepAppLogs(repo: AppLogsRepository, maxAgeHours: number, maxBytesPerApp: number): Promise<void> {
  await repo.deleteOlderThan(maxAgeHours);
  for (const app of await repo.applicationsWithLogs()) await repo.trimToSize(app, maxBytesPerApp);
}
