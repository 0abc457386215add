import { LRUCache } from 'lru-cache';
import type { SecretBox } from '../../platform/crypto/secret-box.js';
import type { LogDrainSource } from '../../platform/db/schema.js';
import { onRecordLogText, type RecordLogText } from '../../platform/logs/index.js';
import type { AppOutputLine } from '../../platform/runtime/application-runtime.js';
import type { DrainLine } from './formats.js';
import type { LogDrainsRepository } from './log-drains.repository.js';
import { transportFor, type DrainTransport, type TransportOptions } from './transports.js';

/** Lines sent in one request or write. */
const BATCH_LINES = 500;
/** How often queues are looked at (and counters written back). */
const TICK_MS = 500;
/** How often the drains are read again (other processes' changes; this one's are applied at once). */
const REFRESH_MS = 5_000;
const MAX_BACKOFF_MS = 60_000;
/** Longest line shipped (a line without a newline for megabytes is cut). */
const MAX_MESSAGE_CHARS = 16 * 1024;

export interface ShipperLogger {
  warn(obj: object, msg?: string): void;
}

interface Drain {
  id: string;
  organizationId: string;
  applicationId: string | null;
  sources: Set<LogDrainSource>;
  transport: DrainTransport;
  queue: DrainLine[];
  sending: boolean;
  failures: number;
  nextAttemptAt: number;
  /** Counts not yet added to the drain's row. */
  sent: number;
  dropped: number;
  failed: number;
  lastError: string | null;
  sentAt: Date | null;
}

/** A line before its names are known. */
type RawLine =
  { kind: 'runtime'; out: AppOutputLine } | { kind: 'record'; table: RecordLogText['table']; recordId: string; text: string; at: Date };

interface AppNames {
  organizationId: string;
  organization: string;
  project: string;
  app: string;
}

interface RecordFacts {
  applicationId: string;
  environment: string | null;
  release: number | null;
}

const SOURCE_OF: Record<RecordLogText['table'], { source: LogDrainSource; instance: string }> = {
  images: { source: 'build', instance: 'build' },
  releases: { source: 'build', instance: 'release' },
  deployments: { source: 'deploy', instance: 'deploy' },
};

/** A deploy log's line starts with its ISO timestamp: taken as the line's time. */
const STAMPED = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z) (.*)$/s;

/** What failed, with no address, token or secret in it. */
function errorText(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  if (e?.code && /^E[A-Z]+$/.test(e.code)) return `connection failed (${e.code})`;
  return (e instanceof Error ? e.message : String(err)).slice(0, 300);
}

/**
 * Ships this process's application output (runtime) and the build and deploy logs it writes to
 * the drains that take them. Producers only push onto bounded in-memory queues: a line beyond a
 * queue's bound is dropped and counted, and each drain sends from its own queue with backoff on
 * failure, so a drain that is down or slow never holds up an application or a pipeline job.
 */
export class LogDrainShipper {
  private drains = new Map<string, Drain>();
  private byOrganization = new Map<string, Drain[]>();
  private intake: RawLine[] = [];
  private pumping = false;
  private timer: NodeJS.Timeout | null = null;
  private refreshTimer: NodeJS.Timeout | null = null;
  private unsubscribe: (() => void) | null = null;
  private stopped = false;
  private readonly apps = new LRUCache<string, AppNames | false>({ max: 5_000, ttl: 60_000 });
  private readonly environments = new LRUCache<string, string>({ max: 5_000 });
  private readonly instances = new LRUCache<string, { name: string; release: number | null }>({ max: 20_000, ttl: 600_000 });
  private readonly records = new LRUCache<string, RecordFacts | false>({ max: 2_000, ttl: 600_000 });

  constructor(
    private readonly repo: LogDrainsRepository,
    private readonly secrets: SecretBox,
    private readonly settings: TransportOptions & { bufferLines: number },
    private readonly log: ShipperLogger,
  ) {}

  /** The runtime's output listener (registered by wire.ts where a runtime runs). */
  acceptOutput = (out: AppOutputLine): void => {
    if (this.drains.size === 0 || this.stopped) return;
    this.push({ kind: 'runtime', out });
  };

  private acceptRecord = (text: RecordLogText): void => {
    if (this.drains.size === 0 || this.stopped) return;
    this.push({ kind: 'record', table: text.table, recordId: text.recordId, text: text.text, at: new Date() });
  };

  private push(line: RawLine) {
    // The intake holds lines until their names are known (a burst of every drain's lines); past its bound, they are
    // dropped (counted when the app is known).
    if (this.intake.length >= this.settings.bufferLines * 4) {
      const app = line.kind === 'runtime' ? this.apps.get(line.out.applicationId) : undefined;
      if (app) for (const d of this.byOrganization.get(app.organizationId) ?? []) d.dropped += 1;
      return;
    }
    this.intake.push(line);
    if (!this.pumping) void this.pump();
  }

  async start(): Promise<void> {
    this.stopped = false;
    this.unsubscribe = onRecordLogText(this.acceptRecord);
    await this.refresh().catch((err: unknown) => this.log.warn({ err }, 'reading log drains failed'));
    this.timer = setInterval(() => void this.tick(), TICK_MS);
    this.timer.unref();
    this.refreshTimer = setInterval(
      () => void this.refresh().catch((err: unknown) => this.log.warn({ err }, 'reading log drains failed')),
      REFRESH_MS,
    );
    this.refreshTimer.unref();
  }

  /** Sends what is queued once more (each drain at most one batch, bounded by its timeout), writes the counts back, closes. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    if (this.timer) clearInterval(this.timer);
    if (this.refreshTimer) clearInterval(this.refreshTimer);
    await Promise.all([...this.drains.values()].map((d) => (d.sending || d.queue.length === 0 ? null : this.send(d))));
    await this.saveCounts();
    for (const d of this.drains.values()) d.transport.close();
  }

  /** Reads the drains again; a drain kept keeps its queue and connection. */
  async refresh(): Promise<void> {
    const rows = await this.repo.all();
    const next = new Map<string, Drain>();
    for (const row of rows) {
      const existing = this.drains.get(row.id);
      if (existing) {
        next.set(row.id, existing);
        continue;
      }
      const target = {
        kind: row.kind,
        url: this.secrets.open(row.url_sealed),
        secret: row.secret_sealed ? this.secrets.open(row.secret_sealed) : null,
        ca: row.ca_pem,
      };
      next.set(row.id, {
        id: row.id,
        organizationId: row.organization_id,
        applicationId: row.application_id,
        sources: new Set(row.sources),
        transport: transportFor(target, this.settings),
        queue: [],
        sending: false,
        failures: 0,
        nextAttemptAt: 0,
        sent: 0,
        dropped: 0,
        failed: 0,
        lastError: null,
        sentAt: null,
      });
    }
    for (const [id, d] of this.drains) if (!next.has(id)) d.transport.close();
    this.drains = next;
    const byOrganization = new Map<string, Drain[]>();
    for (const d of next.values()) byOrganization.set(d.organizationId, [...(byOrganization.get(d.organizationId) ?? []), d]);
    this.byOrganization = byOrganization;
  }

  private async pump(): Promise<void> {
    this.pumping = true;
    try {
      while (this.intake.length > 0) {
        const chunk = this.intake.splice(0, 1_000);
        for (const raw of chunk) {
          try {
            await this.route(raw);
          } catch (err) {
            this.log.warn({ err }, 'a log line could not be routed to its drains');
          }
        }
      }
    } finally {
      this.pumping = false;
    }
  }

  private async route(raw: RawLine): Promise<void> {
    const applicationId = raw.kind === 'runtime' ? raw.out.applicationId : (await this.recordFacts(raw.table, raw.recordId))?.applicationId;
    if (!applicationId) return;
    const names = await this.appNames(applicationId);
    const drains = names ? this.byOrganization.get(names.organizationId) : undefined;
    if (!names || !drains) return;
    const source: LogDrainSource = raw.kind === 'runtime' ? 'runtime' : SOURCE_OF[raw.table].source;
    const takers = drains.filter((d) => d.sources.has(source) && (d.applicationId === null || d.applicationId === applicationId));
    if (takers.length === 0) return;
    const lines: DrainLine[] = [];
    if (raw.kind === 'runtime') {
      const instance = await this.instanceFacts(raw.out);
      lines.push({
        at: raw.out.at,
        source,
        stream: raw.out.stream,
        ...names,
        environment: await this.environmentSlug(raw.out.environmentId),
        release: instance.release,
        instance: instance.name,
        message: raw.out.line.slice(0, MAX_MESSAGE_CHARS),
      });
    } else {
      const facts = (await this.recordFacts(raw.table, raw.recordId))!;
      for (const text of raw.text.split('\n')) {
        if (!text) continue;
        const stamped = STAMPED.exec(text);
        lines.push({
          at: stamped ? new Date(stamped[1]!) : raw.at,
          source,
          stream: 'log',
          ...names,
          environment: facts.environment,
          release: facts.release,
          instance: SOURCE_OF[raw.table].instance,
          message: (stamped ? stamped[2]! : text).slice(0, MAX_MESSAGE_CHARS),
        });
      }
    }
    for (const d of takers) {
      const room = this.settings.bufferLines - d.queue.length;
      if (room < lines.length) d.dropped += lines.length - Math.max(room, 0);
      if (room > 0) d.queue.push(...lines.slice(0, room));
      if (d.queue.length >= BATCH_LINES && !d.sending && Date.now() >= d.nextAttemptAt) void this.send(d);
    }
  }

  private async tick(): Promise<void> {
    const now = Date.now();
    for (const d of this.drains.values()) if (!d.sending && d.queue.length > 0 && now >= d.nextAttemptAt) void this.send(d);
    await this.saveCounts().catch((err: unknown) => this.log.warn({ err }, 'saving log drain counts failed'));
  }

  private async send(d: Drain): Promise<void> {
    d.sending = true;
    const batch = d.queue.splice(0, BATCH_LINES);
    try {
      await d.transport.send(batch);
      d.sent += batch.length;
      d.sentAt = new Date();
      d.failures = 0;
      d.nextAttemptAt = 0;
    } catch (err) {
      // The batch goes back to the front; what no longer fits the bound is dropped (the oldest lines are kept).
      d.queue.unshift(...batch);
      const over = d.queue.length - this.settings.bufferLines;
      if (over > 0) {
        d.queue.length = this.settings.bufferLines;
        d.dropped += over;
      }
      d.failed += 1;
      d.failures += 1;
      d.lastError = errorText(err);
      d.nextAttemptAt = Date.now() + Math.min(1_000 * 2 ** (d.failures - 1), MAX_BACKOFF_MS);
    } finally {
      d.sending = false;
    }
  }

  private async saveCounts(): Promise<void> {
    for (const d of this.drains.values()) {
      if (d.sent === 0 && d.dropped === 0 && d.failed === 0) continue;
      const delta = { sent: d.sent, dropped: d.dropped, failed: d.failed, lastError: d.failed > 0 ? d.lastError : null, sentAt: d.sentAt };
      d.sent = 0;
      d.dropped = 0;
      d.failed = 0;
      await this.repo.addCounts(d.id, delta);
    }
  }

  private async appNames(applicationId: string): Promise<AppNames | null> {
    const cached = this.apps.get(applicationId);
    if (cached !== undefined) return cached || null;
    const names = await this.repo.applicationNames(applicationId);
    this.apps.set(applicationId, names ?? false);
    return names ?? null;
  }

  private async environmentSlug(environmentId: string): Promise<string | null> {
    const cached = this.environments.get(environmentId);
    if (cached !== undefined) return cached;
    const slug = await this.repo.environmentSlug(environmentId);
    if (slug) this.environments.set(environmentId, slug);
    return slug;
  }

  private async instanceFacts(out: AppOutputLine): Promise<{ name: string; release: number | null }> {
    const cached = this.instances.get(out.instanceId);
    if (cached) return cached;
    const row = await this.repo.instanceFacts(out.instanceId);
    const facts = { name: row ? `${row.process_type}.${row.ordinal}` : out.processType, release: row?.version ?? null };
    if (row) this.instances.set(out.instanceId, facts);
    return facts;
  }

  private async recordFacts(table: RecordLogText['table'], recordId: string): Promise<RecordFacts | null> {
    const cached = this.records.get(recordId);
    if (cached !== undefined) return cached || null;
    const facts = await this.repo.recordFacts(table, recordId);
    this.records.set(recordId, facts ?? false);
    return facts ?? null;
  }

  /** A drain made or removed by this process applies at once. */
  changed(): Promise<void> {
    return this.refresh();
  }
}
