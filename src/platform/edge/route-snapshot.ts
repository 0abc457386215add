import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, lstatSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { readFileBeneath } from '../fs/beneath.js';
import type { EdgeRouteUpstream } from '../db/schema.js';
import type { RouteTable, Upstream } from './route-table.js';
import type { DomainRoute } from './edge-directory.js';
import type { MaintenanceWindow } from './maintenance-page.js';

/** The file an edge serves from before (or without) its database: DATA_DIR/edge/routes.json. */
export const ROUTE_SNAPSHOT_FILE = 'routes.json';
/** Far above any real table (thousands of routes are a few hundred KiB); a bigger file is refused, not read. */
const MAX_SNAPSHOT_BYTES = 64 * 1024 * 1024;

/** A verified custom domain's certificate as PostgreSQL keeps it: the private key stays sealed by the platform's keyring. */
export interface CertificateRecord {
  hostname: string;
  issuedAt: number;
  certificatePem: string;
  privateKeyEnc: string;
}

/** What an edge needs to serve every known application at once: routes, custom domains and their certificates. */
export interface RouteSnapshot {
  routes: Array<{ host: string; upstreams: EdgeRouteUpstream[] }>;
  domains: Array<DomainRoute & { hostname: string }>;
  certificates: CertificateRecord[];
  /** Environments in maintenance: an edge restarted without its database keeps answering their page. */
  maintenance: MaintenanceWindow[];
}

/** The directory of the edge's own files (DATA_DIR/edge): made 0700 when missing, its mode left alone otherwise (Caddy's access log shares it). */
export function edgeDirectory(dataDir: string): string {
  const dir = join(dataDir, 'edge');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

export function toSnapshotUpstream(u: Upstream & { ready: boolean }): EdgeRouteUpstream {
  return {
    instance_id: u.instanceId,
    host: u.host,
    port: u.port,
    ready: u.ready,
    application_id: u.owner?.applicationId ?? null,
    environment_id: u.owner?.environmentId ?? null,
    process_type: u.owner?.processType ?? null,
  };
}

export function fromSnapshotUpstream(u: EdgeRouteUpstream): Upstream {
  const owner =
    u.application_id && u.environment_id && u.process_type
      ? { applicationId: u.application_id, environmentId: u.environment_id, processType: u.process_type }
      : undefined;
  return { instanceId: u.instance_id, host: u.host, port: u.port, ...(owner ? { owner } : {}) };
}

/** The table's routes in the snapshot's (and `edge_routes`') shape. */
export function routesOf(table: RouteTable): RouteSnapshot['routes'] {
  return table.snapshot().map((r) => ({ host: r.host, upstreams: r.upstreams.map(toSnapshotUpstream) }));
}

/** Fills the table with the snapshot's routes (readiness included). */
export function seedTable(table: RouteTable, routes: RouteSnapshot['routes']) {
  for (const r of routes) {
    table.set(r.host, r.upstreams.map(fromSnapshotUpstream));
    for (const u of r.upstreams) table.setReady(u.instance_id, u.ready);
  }
}

/**
 * Replaces the snapshot atomically: a new 0600 file beside it (exclusive create, never through a
 * symbolic link), flushed to disk, renamed over the old one. A crash at any point leaves either
 * the old file or the new one whole, never a torn one.
 */
export function writeRouteSnapshot(dir: string, snapshot: RouteSnapshot): void {
  const target = join(dir, ROUTE_SNAPSHOT_FILE);
  const temporary = join(dir, `.${ROUTE_SNAPSHOT_FILE}.${randomBytes(6).toString('hex')}`);
  const fd = openSync(temporary, 'wx', 0o600);
  try {
    writeSync(fd, JSON.stringify({ format: 1, written_at: new Date().toISOString(), ...snapshot }));
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    rmSync(temporary, { force: true });
    throw err;
  }
  closeSync(fd);
  renameSync(temporary, target);
  const dirFd = openSync(dir, 'r');
  try {
    fsyncSync(dirFd);
  } finally {
    closeSync(dirFd);
  }
}

/**
 * The last snapshot written, or null when there is none or it cannot be trusted: it must be a
 * regular file (no symbolic link at any component below `dir`), owned by this process's user
 * and writable by nobody else, as only the platform writes it.
 */
export async function readRouteSnapshot(dir: string): Promise<RouteSnapshot | null> {
  let info;
  try {
    info = lstatSync(join(dir, ROUTE_SNAPSHOT_FILE));
  } catch {
    return null;
  }
  const uid = process.getuid?.();
  if (!info.isFile() || (uid !== undefined && info.uid !== uid) || (info.mode & 0o022) !== 0) return null;
  const bytes = await readFileBeneath(dir, ROUTE_SNAPSHOT_FILE, MAX_SNAPSHOT_BYTES).catch(() => null);
  if (!bytes) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString('utf8'));
  } catch {
    return null;
  }
  return validSnapshot(parsed);
}

const isString = (v: unknown): v is string => typeof v === 'string';
const isNullableString = (v: unknown) => v === null || isString(v);

function validUpstream(u: unknown): u is EdgeRouteUpstream {
  if (typeof u !== 'object' || u === null) return false;
  const o = u as Record<string, unknown>;
  return (
    isString(o.instance_id) &&
    isString(o.host) &&
    Number.isInteger(o.port) &&
    typeof o.ready === 'boolean' &&
    isNullableString(o.application_id) &&
    isNullableString(o.environment_id) &&
    isNullableString(o.process_type)
  );
}

/** Only well-formed entries are kept: a damaged entry costs that entry, not the whole table. */
function validSnapshot(value: unknown): RouteSnapshot | null {
  if (typeof value !== 'object' || value === null) return null;
  const o = value as Record<string, unknown>;
  if (o.format !== 1 || !Array.isArray(o.routes)) return null;
  const routes = o.routes.filter(
    (r): r is RouteSnapshot['routes'][number] =>
      typeof r === 'object' && r !== null && isString(r.host) && Array.isArray(r.upstreams) && r.upstreams.every(validUpstream),
  );
  const domains = (Array.isArray(o.domains) ? o.domains : []).filter(
    (d): d is RouteSnapshot['domains'][number] =>
      typeof d === 'object' &&
      d !== null &&
      isString(d.hostname) &&
      isString(d.routeHostname) &&
      typeof d.httpsRedirect === 'boolean' &&
      typeof d.hsts === 'boolean',
  );
  const certificates = (Array.isArray(o.certificates) ? o.certificates : []).filter(
    (c): c is CertificateRecord =>
      typeof c === 'object' &&
      c !== null &&
      isString(c.hostname) &&
      typeof c.issuedAt === 'number' &&
      isString(c.certificatePem) &&
      isString(c.privateKeyEnc),
  );
  const maintenance = (Array.isArray(o.maintenance) ? o.maintenance : []).filter(
    (m): m is MaintenanceWindow =>
      typeof m === 'object' &&
      m !== null &&
      isString(m.environmentId) &&
      isNullableString(m.message) &&
      Number.isInteger(m.retryAfter) &&
      typeof m.applications === 'object' &&
      m.applications !== null &&
      Object.values(m.applications as object).every(isString),
  );
  return { routes, domains, certificates, maintenance };
}
