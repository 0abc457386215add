import pg from 'pg';

type Listener = () => void;

/** First wait before reconnecting a lost LISTEN connection; doubles while reconnects fail, up to the maximum. */
const FIRST_RECONNECT_MS = 250;
const MAX_RECONNECT_MS = 10_000;
/** Called with each payload of a channel, and with `null` after a reconnect (notifications may have been lost). */
type ChannelListener = (payload: string | null) => void;

/**
 * One LISTEN connection per process, fanned out in memory: streams subscribe to a
 * `(channel, payload)` pair (`slipway_records` / `deployments:<id>`, `slipway_events` /
 * `<application id>`) whatever process wrote the change. The connection opens at the first
 * subscription; when it drops it reconnects and wakes every subscriber, which then re-reads
 * from its cursor (so a notification lost meanwhile costs nothing). Reconnects back off while the
 * database stays away (a restart of PostgreSQL, issue 37), and never end the process.
 */
export class Notifications {
  private client: pg.Client | null = null;
  private connecting: Promise<void> | null = null;
  private readonly channels = new Set<string>();
  private readonly listeners = new Map<string, Set<Listener>>();
  private readonly channelListeners = new Map<string, Set<ChannelListener>>();
  private closed = false;
  private retry: NodeJS.Timeout | null = null;
  private reconnectDelay = FIRST_RECONNECT_MS;

  constructor(
    private readonly databaseUrl: string,
    private readonly onError: (err: unknown) => void = () => {},
  ) {}

  /** Calls `listener` on every notification of `channel` with `payload`; returns the unsubscribe. */
  async subscribe(channel: string, payload: string, listener: Listener): Promise<() => void> {
    const key = `${channel}\u0000${payload}`;
    let set = this.listeners.get(key);
    if (!set) this.listeners.set(key, (set = new Set()));
    set.add(listener);
    const unsubscribe = () => {
      set!.delete(listener);
      if (set!.size === 0 && this.listeners.get(key) === set) this.listeners.delete(key);
    };
    try {
      await this.listen(channel);
    } catch (err) {
      unsubscribe();
      throw err;
    }
    return unsubscribe;
  }

  /** Calls `listener` with every payload of `channel` (e.g. to drop cached entries); returns the unsubscribe. */
  async subscribeChannel(channel: string, listener: ChannelListener): Promise<() => void> {
    let set = this.channelListeners.get(channel);
    if (!set) this.channelListeners.set(channel, (set = new Set()));
    set.add(listener);
    const unsubscribe = () => void set!.delete(listener);
    try {
      await this.listen(channel);
    } catch (err) {
      unsubscribe();
      throw err;
    }
    return unsubscribe;
  }

  /** How many subscriptions are live (tests check that closed streams leave none). */
  get subscriberCount(): number {
    let n = 0;
    for (const set of this.listeners.values()) n += set.size;
    return n;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => {}); // shutdown
  }

  private async listen(channel: string): Promise<void> {
    if (this.closed) throw new Error('notifications are closed');
    await this.connect();
    if (this.channels.has(channel)) return;
    this.channels.add(channel);
    // Lost since: the reconnect LISTENs to every channel in the set, this one included.
    await this.client?.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
  }

  private connect(): Promise<void> {
    if (this.client) return Promise.resolve();
    this.connecting ??= (async () => {
      // Bounded, so a database host that stopped answering fails the attempt (and the next one backs off).
      const client = new pg.Client({ connectionString: this.databaseUrl, connectionTimeoutMillis: 10_000, keepAlive: true });
      client.on('notification', (n) => this.dispatch(n.channel, n.payload ?? ''));
      client.on('error', (err) => this.lost(client, err));
      client.on('end', () => this.lost(client, null));
      try {
        await client.connect();
        for (const channel of this.channels) await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
        this.client = client;
      } catch (err) {
        await client.end().catch(() => {}); // the connect error below is the one to report
        throw err;
      }
    })().finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  private dispatch(channel: string, payload: string) {
    const set = this.listeners.get(`${channel}\u0000${payload}`);
    if (set) for (const listener of [...set]) listener();
    for (const listener of this.channelListeners.get(channel) ?? []) listener(payload);
  }

  private lost(client: pg.Client, err: unknown) {
    if (this.client !== client || this.closed) return;
    this.client = null;
    if (err) this.onError(err);
    this.reconnect();
  }

  private reconnect() {
    if (this.closed || this.retry) return;
    const delay = this.reconnectDelay;
    this.reconnectDelay = Math.min(delay * 2, MAX_RECONNECT_MS);
    this.retry = setTimeout(() => {
      this.retry = null;
      this.connect().then(
        () => {
          this.reconnectDelay = FIRST_RECONNECT_MS;
          for (const set of [...this.listeners.values()]) for (const listener of [...set]) listener();
          for (const set of [...this.channelListeners.values()]) for (const listener of [...set]) listener(null);
        },
        (e) => {
          this.onError(e);
          this.reconnect();
        },
      );
    }, delay);
    this.retry.unref();
  }
}
