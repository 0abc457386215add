import type { Selectable } from 'kysely';
import type { Db } from '../../platform/db/database.js';
import type { Notifications } from '../../platform/db/notifications.js';
import type { AppLogLinesTable } from '../../platform/db/schema.js';
import { invalid } from '../../platform/errors.js';
import { serialPump, type SseStream } from '../../platform/http/sse.js';
import { chosenEnvironmentId } from '../../pipeline/index.js';
import { AppLogsRepository } from './app-logs.repository.js';

export const APP_LOGS_CHANNEL = 'slipway_app_logs';

const view = (r: Selectable<AppLogLinesTable>) => ({
  id: String(r.id),
  timestamp: r.logged_at.toISOString(),
  process_type: r.process_type,
  instance_id: r.instance_id,
  stream: r.stream,
  line: r.line,
  environment_id: r.environment_id,
});

/** Reads and follows the stored output of an application's instances. */
export class AppLogsService {
  private readonly repo: AppLogsRepository;

  constructor(
    private readonly db: Db,
    repo: AppLogsRepository,
    private readonly apps: { authorize(userId: string, applicationId: string): Promise<unknown> },
    private readonly notifications: Notifications,
  ) {
    this.repo = repo;
  }

  async query(
    userId: string,
    applicationId: string,
    q: { since?: string; until?: string; process?: string; search?: string; limit?: number; environment?: string },
  ) {
    await this.apps.authorize(userId, applicationId);
    const since = q.since ? new Date(q.since) : undefined;
    const until = q.until ? new Date(q.until) : undefined;
    if (since && until && since >= until) throw invalid('since', 'must be before `until`');
    const environmentId = await chosenEnvironmentId(this.db, applicationId, q.environment);
    const rows = await this.repo.query(applicationId, {
      environmentId,
      since,
      until,
      process: q.process,
      search: q.search,
      limit: q.limit ?? 100,
    });
    return { items: rows.map(view) };
  }

  authorize(userId: string, applicationId: string) {
    return this.apps.authorize(userId, applicationId);
  }

  /** `event: log` per new line (after `Last-Event-ID`, else from now on). */
  async follow(stream: SseStream, applicationId: string, process: string | undefined, lastEventId: string | undefined): Promise<void> {
    const given = lastEventId ? Number.parseInt(lastEventId, 10) : Number.NaN;
    let cursor = Number.isFinite(given) && given >= 0 ? given : -1;
    const pump = serialPump(
      stream,
      async () => {
        if (cursor < 0) cursor = await this.repo.lastId(applicationId);
        for (;;) {
          const rows = await this.repo.after(applicationId, cursor, process, 500);
          for (const r of rows) {
            stream.send({ id: r.id, event: 'log', data: view(r) });
            cursor = r.id;
          }
          if (rows.length < 500 || stream.isClosed) return;
        }
      },
      // The pump ends the stream on an error; the client reconnects with Last-Event-ID and misses nothing.
      () => {},
    );
    stream.onClose(await this.notifications.subscribe(APP_LOGS_CHANNEL, applicationId, pump));
    pump();
  }
}
