import type { Db } from '../../platform/db/database.js';
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
    const row: NewLogLine = {
      application_id: out.applicationId,
      environment_id: out.environmentId,
      instance_id: out.instanceId,
      process_type: out.processType,
      stream: out.stream,
      line: out.line.slice(0, MAX_LINE_CHARS),
      logged_at: out.at,
    };
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
    this.pending = [];
    this.dropped = new Map();
    if (batch.length === 0) return this.chain;
    this.chain = this.chain.then(async () => {
      try {
        await this.repo.insert(batch);
      } catch (err) {
        this.options.logger.warn({ err, lines: batch.length }, 'storing application log lines failed');
        return;
      }
      await this.rotateChatty(batch);
    });
    return this.chain;
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
