import type { AppOutputLine } from '../../platform/runtime/application-runtime.js';
import type { PlatformLogger } from '../../platform/wiring.js';
import type { AlertsRepository, LogPatternRule } from './alerts.repository.js';

/** Counts are added to the database at most this often (one statement for every rule that matched). */
const FLUSH_MS = 1000;
/** Longest stretch of a line matched (the log store keeps no more of it either). */
const MAX_LINE_CHARS = 16 * 1024;
/** Most rules that ever differ in one pending flush: beyond, the oldest pending counts are written first. */
const MAX_PENDING_RULES = 10_000;

interface Matcher extends LogPatternRule {
  needle: string;
}

/**
 * Counts `log_matches` rules' lines where they are read: the output of the instances this process
 * runs, matched against only the rules of that line's application (cached, reloaded every
 * `refreshMs`), with a plain substring test (no regular expression, so no pattern can make a line
 * slow). The evaluator then reads one counter per rule instead of scanning stored lines, which
 * are rotated by size and would undercount a chatty application's window anyway.
 */
export class LogMatchCounter {
  private readonly rules = new Map<string, { matchers: Matcher[]; loadedAt: number }>();
  private readonly stale = new Set<string>();
  private loading: Promise<void> | null = null;
  private counts = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly repo: AlertsRepository,
    private readonly refreshMs: number,
    private readonly log: PlatformLogger,
    /** With several workers following one cluster, only the one storing the logs counts them. */
    private readonly shouldCount: () => boolean = () => true,
  ) {}

  accept(out: AppOutputLine): void {
    if (!this.shouldCount()) return;
    const cached = this.rules.get(out.applicationId);
    if (!cached || Date.now() - cached.loadedAt > this.refreshMs) this.reload(out.applicationId);
    if (!cached || cached.matchers.length === 0) return;
    const line = out.line.length > MAX_LINE_CHARS ? out.line.slice(0, MAX_LINE_CHARS) : out.line;
    let lower: string | undefined;
    for (const m of cached.matchers) {
      if (m.environment_id !== null && m.environment_id !== out.environmentId) continue;
      const text = m.ignore_case ? (lower ??= line.toLowerCase()) : line;
      if (text.includes(m.needle)) this.count(m.id);
    }
  }

  private count(ruleId: string) {
    if (this.counts.size >= MAX_PENDING_RULES && !this.counts.has(ruleId)) void this.flush();
    this.counts.set(ruleId, (this.counts.get(ruleId) ?? 0) + 1);
    this.timer ??= setTimeout(() => {
      this.timer = null;
      void this.flush();
    }, FLUSH_MS);
  }

  /** Reads the rules of every application asked for since the last read, in one query. */
  private reload(applicationId: string) {
    this.stale.add(applicationId);
    if (this.loading) return;
    this.loading = (async () => {
      while (this.stale.size > 0) {
        const ids = [...this.stale];
        this.stale.clear();
        const loadedAt = Date.now();
        try {
          const rows = await this.repo.logPatternRules(ids);
          for (const id of ids) this.rules.set(id, { matchers: [], loadedAt });
          for (const r of rows)
            this.rules.get(r.application_id)!.matchers.push({ ...r, needle: r.ignore_case ? r.pattern.toLowerCase() : r.pattern });
        } catch (err) {
          // Keep counting with what was read before; asked again after the next interval.
          for (const id of ids) this.rules.set(id, { matchers: this.rules.get(id)?.matchers ?? [], loadedAt });
          this.log.warn({ err }, 'reading the log pattern alert rules failed');
        }
      }
    })().finally(() => (this.loading = null));
  }

  /** Adds the counts so far to the rules' counters (a failed write loses those counts, logged: never the lines). */
  flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    const counts = this.counts;
    this.counts = new Map();
    if (counts.size === 0) return this.chain;
    this.chain = this.chain.then(() =>
      this.repo.addLogMatches(counts).catch((err) => this.log.warn({ err, rules: counts.size }, 'adding log pattern counts failed')),
    );
    return this.chain;
  }
}
