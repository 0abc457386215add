import type { Db } from '../../platform/db/database.js';
import type { Notifications } from '../../platform/db/notifications.js';
import { notFound } from '../../platform/errors.js';
import { serialPump, type SseStream } from '../../platform/http/sse.js';
import { completeLines, lineCursor, streamedLine } from './log-lines.js';
import { StreamsRepository } from './streams.repository.js';

export const RECORDS_CHANNEL = 'slipway_records';
export const EVENTS_CHANNEL = 'slipway_events';
const ENV_DEPLOY_POLL_MS = 2000;

export type LoggedRecord = 'images' | 'deployments' | 'one_off_runs';

const FINAL: Record<LoggedRecord, string[]> = {
  images: ['built', 'error'],
  deployments: ['complete', 'error'],
  one_off_runs: ['succeeded', 'failed', 'timed_out'],
};

/** What an `end` event says about a record that finished. */
function endData(kind: LoggedRecord, r: { status: string; error_detail: string | null; exit_code?: number | null }) {
  if (kind === 'one_off_runs') return { status: r.status, exit_code: r.exit_code ?? null, error_detail: r.error_detail };
  return { status: r.status, error_detail: r.error_detail };
}

/** How the API checks a caller may see an application (the applications module's rule). */
export type AuthorizeApplication = (userId: string, applicationId: string) => Promise<unknown>;

/**
 * Live streams over records any process writes: log lines (resumable by line number),
 * environment deploy logs (resumable by a per-section cursor) and application events
 * (resumable by event id). Each stream subscribes to one notification before it reads,
 * so nothing written between the read and the subscription is missed.
 */
export class StreamsService {
  private readonly repo: StreamsRepository;

  constructor(
    db: Db,
    repo: StreamsRepository,
    private readonly notifications: Notifications,
    private readonly authorize: AuthorizeApplication,
    private readonly onError: (err: unknown) => void = () => {},
  ) {
    this.repo = repo;
  }

  private read(kind: LoggedRecord, id: string) {
    return kind === 'images' ? this.repo.image(id) : kind === 'deployments' ? this.repo.deployment(id) : this.repo.run(id);
  }

  authorizeApplication(userId: string, applicationId: string): Promise<unknown> {
    return this.authorize(userId, applicationId);
  }

  /** Throws 404/403 unless the caller may see the record. */
  async authorizeRecord(userId: string, kind: LoggedRecord, id: string): Promise<void> {
    const row = await this.read(kind, id);
    if (!row) throw notFound(kind === 'images' ? 'Image' : kind === 'deployments' ? 'Deployment' : 'Run');
    await this.authorize(userId, row.application_id);
  }

  /** `event: line` for the log so far and each new line, then `event: end` and the stream closes. */
  async followRecordLog(stream: SseStream, kind: LoggedRecord, id: string, lastEventId: string | undefined): Promise<void> {
    let sent = lineCursor(lastEventId);
    const pump = serialPump(
      stream,
      async () => {
        const row = await this.read(kind, id);
        if (!row) {
          stream.end();
          return;
        }
        const final = FINAL[kind].includes(row.status);
        const lines = completeLines(row.text, final);
        for (; sent < lines.length; sent++) stream.send({ id: sent + 1, event: 'line', data: streamedLine(lines[sent]!, row.updated_at) });
        if (final) {
          stream.send({ id: `${sent}-end`, event: 'end', data: endData(kind, row) });
          stream.end();
        }
      },
      this.onError,
    );
    stream.onClose(await this.notifications.subscribe(RECORDS_CHANNEL, `${kind}:${id}`, pump));
    pump();
  }

  /**
   * An environment deploy's services' logs (build, release, deployment per service), each
   * line prefixed with its service. Sections grow independently, so the event id is the
   * count of lines sent from each section (`3.0.12.5.0.0`): a resume misses nothing even
   * when two services log at once.
   */
  async followEnvironmentDeploy(
    stream: SseStream,
    deployId: string,
    lastEventId: string | undefined,
    refresh: () => Promise<unknown>,
  ): Promise<void> {
    const sent: number[] = (lastEventId ?? '')
      .split('.')
      .map((n) => Number.parseInt(n, 10))
      .map((n) => (Number.isFinite(n) && n > 0 ? n : 0));
    const watched = new Map<string, () => void>();
    const watch = async (key: string) => {
      if (watched.has(key) || stream.isClosed) return;
      watched.set(key, () => {});
      const unsubscribe = await this.notifications.subscribe(RECORDS_CHANNEL, key, pump);
      watched.set(key, unsubscribe);
    };
    stream.onClose(() => {
      for (const unsubscribe of watched.values()) unsubscribe();
    });
    const pump = serialPump(
      stream,
      async () => {
        // The environments module links its services' records and settles the deploy when it is read.
        await refresh();
        const deploy = await this.repo.environmentDeploy(deployId);
        if (!deploy) {
          stream.end();
          return;
        }
        const sections: Array<{ service: string; key: string | null; text: string | null; final: boolean; at: Date }> = [];
        for (const s of deploy.services) {
          sections.push(
            {
              service: s.service,
              key: s.image_id && `images:${s.image_id}`,
              text: deploy.kind === 'deploy' ? s.image_log : null,
              final: s.image_status !== 'building',
              at: deploy.updated_at,
            },
            {
              service: s.service,
              key: s.release_id && `releases:${s.release_id}`,
              text: s.release_log,
              final: s.release_status !== 'building',
              at: deploy.updated_at,
            },
            {
              service: s.service,
              key: s.deployment_id && `deployments:${s.deployment_id}`,
              text: s.deployment_log,
              final: s.deployment_status === 'complete' || s.deployment_status === 'error',
              at: deploy.updated_at,
            },
          );
        }
        for (const section of sections) if (section.key) await watch(section.key);
        const deployFinal = deploy.status !== 'deploying';
        sections.forEach((section, i) => {
          const lines = completeLines(section.text ?? '', section.final || deployFinal);
          for (sent[i] ??= 0; sent[i]! < lines.length; sent[i]!++) {
            const line = streamedLine(lines[sent[i]!]!, section.at);
            const id = sections.map((_, j) => (j === i ? sent[i]! + 1 : (sent[j] ?? 0))).join('.');
            stream.send({ id, event: 'line', data: { ...line, line: `${section.service} | ${line.line}`, service: section.service } });
          }
        });
        if (deployFinal) {
          stream.send({
            id: `${sections.map((_, j) => sent[j] ?? 0).join('.')}-end`,
            event: 'end',
            data: { status: deploy.status, error_detail: deploy.error_detail },
          });
          stream.end();
        }
      },
      this.onError,
    );
    await watch(`environment_deploys:${deployId}`);
    // A service's next record (its release, its deployment) is linked only when the deploy is
    // read, and nothing notifies its creation: a slow poll covers what no notification does.
    const poll = setInterval(pump, ENV_DEPLOY_POLL_MS);
    stream.onClose(() => clearInterval(poll));
    pump();
  }

  /** Application events after `Last-Event-ID` (or, without one, from now on). */
  async followEvents(stream: SseStream, applicationId: string, lastEventId: string | undefined): Promise<void> {
    const given = lastEventId ? Number.parseInt(lastEventId, 10) : Number.NaN;
    let cursor = Number.isFinite(given) && given >= 0 ? given : -1;
    const pump = serialPump(
      stream,
      async () => {
        if (cursor < 0) cursor = await this.repo.lastEventId(applicationId);
        for (;;) {
          const rows = await this.repo.eventsAfter(applicationId, cursor, 500);
          for (const e of rows) {
            stream.send({
              id: e.id,
              event: e.kind,
              data: {
                ...e.data,
                event_id: e.id,
                kind: e.kind,
                application_id: e.application_id,
                id: e.subject_id,
                status: e.status,
                at: e.at.toISOString(),
              },
            });
            cursor = e.id;
          }
          if (rows.length < 500 || stream.isClosed) return;
        }
      },
      this.onError,
    );
    stream.onClose(await this.notifications.subscribe(EVENTS_CHANNEL, applicationId, pump));
    pump();
  }
}
