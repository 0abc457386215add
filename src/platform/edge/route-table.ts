import { RequestStats, type RequestOwner } from './request-stats.js';

/** One running web instance the router may send requests to. */
export interface Upstream {
  instanceId: string;
  host: string;
  port: number;
  /** Whose requests these are, for the per-application counters (none: not counted). */
  owner?: RequestOwner;
  /** `RequestStats.keyOf(owner)`, computed once when the route is set. */
  statsKey?: string;
}

interface Route {
  upstreams: Upstream[];
  next: number;
}

/**
 * Host name → healthy web instances. A route is replaced in one assignment, so a request
 * sees either the old set or the new set, never a mix or an empty gap. In-flight requests
 * are counted per instance so a retired instance is stopped only after it has drained.
 */
export class RouteTable {
  private readonly routes = new Map<string, Route>();
  private readonly inflight = new Map<string, number>();
  /** Instances that crashed or restart: skipped until they are healthy again. */
  private readonly down = new Set<string>();
  private readonly drained = new Map<string, Array<() => void>>();

  static normalize(host: string): string {
    return host.trim().toLowerCase().replace(/:\d+$/, '').replace(/\.$/, '');
  }

  set(host: string, upstreams: Upstream[]) {
    const withKeys = upstreams.map((u) => (u.owner ? { ...u, statsKey: RequestStats.keyOf(u.owner) } : { ...u }));
    this.routes.set(RouteTable.normalize(host), { upstreams: withKeys, next: 0 });
  }

  delete(host: string) {
    this.routes.delete(RouteTable.normalize(host));
  }

  /** The hosts with a route to any of these instances. */
  hostsRoutingTo(instanceIds: string[]): string[] {
    const ids = new Set(instanceIds);
    return [...this.routes].filter(([, route]) => route.upstreams.some((u) => ids.has(u.instanceId))).map(([host]) => host);
  }

  has(host: string): boolean {
    return this.routes.has(RouteTable.normalize(host));
  }

  /** Whose instances serve an already normalized host name (the first upstream's owner; none when unknown). */
  ownerOf(host: string): Upstream['owner'] {
    return this.routes.get(host)?.upstreams[0]?.owner;
  }

  upstreams(host: string): Upstream[] {
    return [...(this.routes.get(RouteTable.normalize(host))?.upstreams ?? [])];
  }

  /** Every instance some route names. */
  instanceIds(): Set<string> {
    const ids = new Set<string>();
    for (const route of this.routes.values()) for (const u of route.upstreams) ids.add(u.instanceId);
    return ids;
  }

  setReady(instanceId: string, ready: boolean) {
    if (ready) this.down.delete(instanceId);
    else this.down.add(instanceId);
  }

  /**
   * The next ready upstream round-robin for an already normalized host name, skipping
   * `exclude` (those that already failed this request). `undefined`: no such host; `null`:
   * the host has no ready instance.
   */
  pick(host: string, exclude?: ReadonlySet<string>): Upstream | null | undefined {
    const route = this.routes.get(host);
    if (!route) return undefined;
    const n = route.upstreams.length;
    for (let i = 0; i < n; i++) {
      const u = route.upstreams[(route.next + i) % n]!;
      if (this.down.has(u.instanceId) || exclude?.has(u.instanceId)) continue;
      route.next = (route.next + i + 1) % n;
      return u;
    }
    return null;
  }

  /** Every route with its upstreams and whether each is ready (what an external proxy is configured from). */
  snapshot(): Array<{ host: string; upstreams: Array<Upstream & { ready: boolean }> }> {
    return [...this.routes].map(([host, route]) => ({
      host,
      upstreams: route.upstreams.map((u) => ({ ...u, ready: !this.down.has(u.instanceId) })),
    }));
  }

  /** Host names whose route names this instance. */
  hostsOf(instanceId: string): string[] {
    return [...this.routes].filter(([, r]) => r.upstreams.some((u) => u.instanceId === instanceId)).map(([host]) => host);
  }

  acquire(instanceId: string) {
    this.inflight.set(instanceId, (this.inflight.get(instanceId) ?? 0) + 1);
  }

  release(instanceId: string) {
    const n = (this.inflight.get(instanceId) ?? 1) - 1;
    if (n > 0) {
      this.inflight.set(instanceId, n);
      return;
    }
    this.inflight.delete(instanceId);
    for (const resolve of this.drained.get(instanceId) ?? []) resolve();
    this.drained.delete(instanceId);
  }

  inflightOf(instanceId: string): number {
    return this.inflight.get(instanceId) ?? 0;
  }

  /** Resolves when no request is in flight to any of the instances, or after `timeoutMs`. */
  async drain(instanceIds: string[], timeoutMs: number): Promise<void> {
    const waits = instanceIds
      .filter((id) => this.inflightOf(id) > 0)
      .map(
        (id) =>
          new Promise<void>((resolve) => {
            const list = this.drained.get(id) ?? [];
            list.push(resolve);
            this.drained.set(id, list);
          }),
      );
    if (waits.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(waits),
      new Promise<void>((r) => {
        timer = setTimeout(r, timeoutMs);
      }),
    ]);
    clearTimeout(timer);
  }

  forget(instanceIds: string[]) {
    for (const id of instanceIds) this.down.delete(id);
  }
}
