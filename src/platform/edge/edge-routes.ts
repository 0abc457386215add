import { hostname as machineName } from 'node:os';
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Db } from '../db/database.js';
import type { Notifications } from '../db/notifications.js';
import type { EdgeDriver } from './edge-driver.js';
import type { RouteTable } from './route-table.js';
import { fromSnapshotUpstream, seedTable, toSnapshotUpstream } from './route-snapshot.js';

/** The notification every route change sends (channel, payload). */
export const EDGE_CHANNEL = 'slipway_edge';
const CHANGED = 'routes';
/** An edge process is alive while its heartbeat is younger than this. */
const EDGE_ALIVE_SECONDS = 15;
const HEARTBEAT_MS = 5000;

/**
 * The workers' side of edge processes of their own: every route change is written to
 * `edge_routes` with a new version (one transaction, then NOTIFY), and `drained()` waits until
 * every live edge process reports that version drained before a retired instance stops.
 * Without edge processes this costs one write per route change and one read per retirement.
 */
export class EdgeRoutes {
  private version = 0;

  constructor(private readonly db: Db) {}

  /** Writes the current routes of these hosts (a host no longer in the table is removed). */
  async publish(table: RouteTable, hosts: string[]): Promise<void> {
    const routes = new Map(table.snapshot().map((r) => [r.host, r.upstreams]));
    this.version = await this.db.transaction().execute(async (tx) => {
      const { version } = await tx
        .updateTable('edge_route_version')
        .set({ version: sql`version + 1` })
        .returning('version')
        .executeTakeFirstOrThrow();
      for (const host of hosts) {
        const upstreams = routes.get(host);
        if (!upstreams) {
          await tx.deleteFrom('edge_routes').where('hostname', '=', host).execute();
          continue;
        }
        const row = { hostname: host, upstreams: JSON.stringify(upstreams.map(toSnapshotUpstream)), version: Number(version) };
        await tx
          .insertInto('edge_routes')
          .values(row)
          .onConflict((oc) => oc.column('hostname').doUpdateSet({ upstreams: row.upstreams, version: row.version, updated_at: sql`now()` }))
          .execute();
      }
      await sql`SELECT pg_notify(${EDGE_CHANNEL}, ${CHANGED})`.execute(tx);
      return Number(version);
    });
  }

  /**
   * Fills `table` with the routes last published (by this process's predecessor): what an adopted proxy daemon still
   * serves, so that the first change this process makes (one application's instances adopted) keeps the others.
   */
  async seed(table: RouteTable): Promise<void> {
    seedTable(table, await this.db.selectFrom('edge_routes').select(['hostname as host', 'upstreams']).execute());
  }

  /** Resolves once every live edge process serves the last published version with nothing in flight to older instances. */
  async drained(timeoutMs: number): Promise<void> {
    const version = this.version;
    if (version === 0) return;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const behind = await this.db
        .selectFrom('edge_nodes')
        .select('id')
        .where('drained_version', '<', version)
        .where('heartbeat_at', '>', sql<Date>`now() - make_interval(secs => ${EDGE_ALIVE_SECONDS})`)
        .limit(1)
        .execute();
      if (behind.length === 0 || Date.now() >= deadline) return;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/**
 * An edge process (`SLIPWAY_ROLE=edge`): serves the routes the workers publish in PostgreSQL,
 * follows their changes through LISTEN/NOTIFY (and a poll, in case a notification is lost), and
 * reports each version once the instances it stopped naming have no request in flight.
 */
export class EdgeNode {
  readonly id = randomUUID();
  private timer: NodeJS.Timeout | null = null;
  private unsubscribe: (() => void) | null = null;
  private syncing: Promise<void> | null = null;
  private again = false;
  private stopped = false;

  constructor(
    private readonly db: Db,
    private readonly driver: EdgeDriver,
    private readonly notifications: Notifications,
    private readonly options: {
      drainTimeoutMs: number;
      pollMs?: number;
      onError?: (err: unknown) => void;
      /** After each load from the database that the edge now serves (the edge process persists it). */
      onSynced?: () => void;
    },
  ) {}

  /** Registers this edge and loads the routes; may be called again after a failure (the database unreachable). */
  async start(): Promise<void> {
    await this.db
      .insertInto('edge_nodes')
      .values({ id: this.id, hostname: machineName(), pid: process.pid })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
    this.unsubscribe ??= await this.notifications.subscribe(EDGE_CHANNEL, CHANGED, () => void this.sync());
    await this.sync();
    this.timer ??= setInterval(() => void this.heartbeat(), Math.min(HEARTBEAT_MS, this.options.pollMs ?? HEARTBEAT_MS));
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.unsubscribe?.();
    await this.syncing;
    await this.db
      .deleteFrom('edge_nodes')
      .where('id', '=', this.id)
      .execute()
      // Shutdown: a stale edge node row expires by its heartbeat age.
      .catch(() => {});
  }

  private async heartbeat() {
    await this.db
      .updateTable('edge_nodes')
      .set({ heartbeat_at: sql`now()` })
      .where('id', '=', this.id)
      .execute()
      .catch((err) => this.options.onError?.(err));
    await this.sync();
  }

  /** Loads the routes again (one load at a time; a change meanwhile triggers one more). */
  sync(): Promise<void> {
    if (this.syncing) {
      this.again = true;
      return this.syncing;
    }
    this.syncing = (async () => {
      do {
        this.again = false;
        if (this.stopped) return;
        await this.load().catch((err) => this.options.onError?.(err));
      } while (this.again);
    })().finally(() => {
      this.syncing = null;
    });
    return this.syncing;
  }

  private async load() {
    const { rows, version } = await this.db
      .transaction()
      .setIsolationLevel('repeatable read')
      .execute(async (tx) => ({
        rows: await tx.selectFrom('edge_routes').select(['hostname', 'upstreams']).execute(),
        version: Number((await tx.selectFrom('edge_route_version').select('version').executeTakeFirstOrThrow()).version),
      }));
    const table = this.driver.table;
    const before = table.instanceIds();
    const hosts = new Set(rows.map((r) => r.hostname));
    for (const r of rows) {
      table.set(r.hostname, r.upstreams.map(fromSnapshotUpstream));
      for (const u of r.upstreams) table.setReady(u.instance_id, u.ready);
    }
    for (const { host } of table.snapshot()) if (!hosts.has(host)) table.delete(host);
    await this.driver.apply();
    const now = table.instanceIds();
    const gone = [...before].filter((id) => !now.has(id));
    await this.driver.drain(gone, this.options.drainTimeoutMs);
    table.forget(gone);
    this.options.onSynced?.();
    await this.db
      .updateTable('edge_nodes')
      .set({ drained_version: version, heartbeat_at: sql`now()` })
      .where('id', '=', this.id)
      .execute();
  }
}
