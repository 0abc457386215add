import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BenchContext, SeededWorld } from './case.js';
import { embeddedSuperuserUrl } from '../../src/platform/db/embedded.js';
import { createScratchDatabase } from '../../test/helpers/scratch-database.js';
import { ROOT, startProcess, type RunningServer } from './servers.js';

export interface RunningSlipway {
  server: RunningServer;
  /** The database the server uses (to seed in bulk, or for a baseline reading the same data). */
  databaseUrl: string;
  /** Authenticated as a generated administrator. */
  ctx: BenchContext;
  stop(): Promise<void>;
}

/** A database for the run: a fresh one on DATABASE_URL's server, or none (the server's embedded one). */
async function benchDatabase(): Promise<{ url?: string; drop: () => Promise<void> }> {
  const base = process.env.DATABASE_URL;
  if (!base) return { drop: async () => {} };
  return createScratchDatabase(base, `slipway_bench_${randomBytes(4).toString('hex')}`);
}

function contextFor(appUrl: string, auth: Record<string, string>): BenchContext {
  let world: Promise<SeededWorld> | undefined;
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${appUrl}${path}`, {
      method,
      headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = await res.json();
    if (!res.ok) throw new Error(`${method} ${path} → ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  return {
    appUrl,
    auth,
    api,
    world: () =>
      (world ??= (async () => {
        const org = await api('POST', '/v1/organizations', { name: 'Bench' });
        const project = await api('POST', '/v1/projects', { name: 'Web', organization_id: org.id });
        const app = await api('POST', '/v1/applications', { name: 'API', project_id: project.id });
        return { org, project, app };
      })()),
  };
}

/**
 * Slipway as `npm start` runs it (compiled `dist/main.js`, API role) on its embedded PostgreSQL in a
 * temporary directory, or on a fresh database of DATABASE_URL's server; logged in as an administrator.
 */
export async function startSlipway(options: { logLevel: string; nodeFlags?: string[] }): Promise<RunningSlipway> {
  if (!existsSync(join(ROOT, 'dist', 'main.js'))) throw new Error('dist/main.js is missing: run `npm run build` first');
  const dataDir = mkdtempSync(join(tmpdir(), 'slipway-bench-'));
  const database = await benchDatabase();
  const embeddedPort = 56000 + Math.floor(Math.random() * 4000);
  const admin = { email: 'bench@example.com', password: `bench-${randomBytes(8).toString('hex')}` };
  const cleanUp = async () => {
    await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
  };
  let server: RunningServer;
  try {
    server = await startProcess(
      'dist/main.js',
      {
        DATA_DIR: dataDir,
        PORT: '0',
        HOST: '127.0.0.1',
        ROUTER_PORT: '0',
        SLIPWAY_ROLE: 'api',
        LOG_LEVEL: options.logLevel,
        EMBEDDED_PG_PORT: String(embeddedPort),
        ADMIN_EMAIL: admin.email,
        ADMIN_PASSWORD: admin.password,
        // The write cases create releases as fast as they can: nothing runs them (API role), so the queue caps are lifted.
        PIPELINE_ORG_QUEUE_LIMIT: '100000',
        PIPELINE_USER_QUEUE_LIMIT: '100000',
        PIPELINE_SITE_QUEUE_LIMIT: '1000000',
        // The operator's DATABASE_URL is usually a superuser's: the bench measures speed, not that wall.
        ...(database.url ? { DATABASE_URL: database.url, DATABASE_ALLOW_SUPERUSER: 'true' } : {}),
      },
      /API listening on (http:\/\/127\.0\.0\.1:\d+)/,
      options.nodeFlags,
    );
  } catch (err) {
    await cleanUp();
    throw err;
  }
  const stop = async () => {
    await server.stop();
    await cleanUp();
  };
  try {
    const databaseUrl = database.url ?? embeddedSuperuserUrl(dataDir, embeddedPort, 'slipway');
    const login = await fetch(`${server.url}/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(admin),
    });
    const cookie = login.headers.get('set-cookie')?.split(';')[0] ?? '';
    const key = (await (
      await fetch(`${server.url}/v1/auth/api-keys`, {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'bench' }),
      })
    ).json()) as { key: string };
    return { server, databaseUrl, ctx: contextFor(server.url, { 'x-api-key': key.key }), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
