import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { inject } from 'vitest';
import { buildApp } from '../../src/app.js';
import { loadConfig, type Env } from '../../src/config.js';
import type { AppContext } from '../../src/platform/context.js';
import { hashPassword } from '../../src/platform/crypto/passwords.js';
import { generateKeyText, SecretBox, parseKey } from '../../src/platform/crypto/secret-box.js';
import { createDb } from '../../src/platform/db/database.js';
import type { App } from '../../src/platform/http/types.js';
import { PipelineJobs } from '../../src/platform/jobs/pipeline-jobs.js';
import { pipelineLimits } from '../../src/platform/jobs/job-store.js';
import { createRuntime } from '../../src/platform/runtime/index.js';
import { start } from '../../src/lifecycle.js';
import { REDACT } from '../../src/platform/logs/process-logger.js';
import { applicationJobPorts } from '../../src/platform/jobs/application-ports.js';
import { composePlatform, createIdentity } from '../../src/services.js';
import { pino } from 'pino';
import { v7 as uuidv7 } from 'uuid';
import { createScratchDatabase } from './scratch-database.js';
import { sandboxMissing } from './sandbox.js';

const TEMPLATE_DB = 'slipway_test_template';

/**
 * Host-wide numbers a platform hands out as "the lowest free one in its database": add-on ports
 * and sandbox uids. Test files run side by side (vitest.config.ts maxWorkers), each with its own
 * database, so each worker slot takes its own slice of the default ranges; slice 0 (the ranges'
 * starts) stays for platforms the tests start as processes with the defaults. Two test runs at once
 * (two checkouts on one machine) set SLIPWAY_TEST_SLOT_OFFSET apart in one of them (e.g. 4).
 */
function hostRangesOfThisWorker(): Partial<Env> {
  const offset = Number(process.env.SLIPWAY_TEST_SLOT_OFFSET) || 0;
  const slot = 1 + (((Number(process.env.VITEST_POOL_ID) || 1) - 1 + offset) % 9);
  const ports = 15400 + 60 * slot;
  const uids = 200000 + 10000 * slot;
  return { ADDONS_PORT_RANGE: `${ports}-${ports + 59}`, SANDBOX_UID_RANGE: `${uids}-${uids + 9999}` };
}

export interface TestUser {
  id: string;
  username: string;
  email: string;
  password: string;
  apiKey: string;
  /** Headers that authenticate as this user. */
  headers: Record<string, string>;
}

export interface Harness {
  app: App;
  ctx: AppContext;
  databaseUrl: string;
  dataDir: string;
  /** Everything the server logged, as text. */
  logs: () => string;
  user(overrides?: Partial<{ username: string; admin: boolean }>): Promise<TestUser>;
  close(): Promise<void>;
}

/** A fresh database cloned from the migrated template: every test file gets its own. */
export async function freshDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const adminUrl = inject('postgresAdminUrl');
  const name = `t_${randomBytes(6).toString('hex')}`;
  return createScratchDatabase(adminUrl, name, { template: TEMPLATE_DB, ownerUrl: inject('postgresOwnerUrl') });
}

export interface HarnessOptions {
  /** Open the pipeline job store on the test database and run workers in this process. */
  jobs?: boolean;
  /** Run deployed applications and the router (on ROUTER_HOST:ROUTER_PORT, e.g. 127.0.0.1:0) here; needs `jobs`. */
  runtime?: boolean;
}

export async function createHarness(env: Partial<Env> = {}, options: HarnessOptions = {}): Promise<Harness> {
  const database = await freshDatabase();
  const dataDir = mkdtempSync(join(tmpdir(), 'slipway-test-data-'));
  // Test repositories live in the temp folder: members may build from there (the operator's
  // SOURCE_PATH_ALLOWLIST); test/isolation/ checks the policy without it.
  // Applications run sandboxed (the default) wherever the machine allows it; elsewhere the
  // runtime's other tests still run, unconfined, and test/isolation/ skips.
  const unsandboxed = options.runtime || options.jobs ? sandboxMissing() : null;
  if (unsandboxed && env.RUNTIME_ISOLATION === undefined)
    console.warn(`${unsandboxed}; this harness runs applications with RUNTIME_ISOLATION=none`);
  const config = loadConfig(
    {},
    {
      DATA_DIR: dataDir,
      DATABASE_URL: database.url,
      LOG_LEVEL: 'info',
      SOURCE_PATH_ALLOWLIST: tmpdir(),
      // Deployments complete once healthy; test/pipeline-deploy/diagnosis.test.ts sets a window per application.
      DEPLOY_STABILITY_WINDOW_SECONDS: 0,
      // The built-in edge (the default) unless a test names another (nginx has test/edge/nginx.test.ts).
      EDGE_DRIVER: 'builtin',
      // The router on a free loopback port unless a test names one: two files side by side on the default
      // 0.0.0.0:8081 would take each other's port.
      ROUTER_HOST: '127.0.0.1',
      ROUTER_PORT: 0,
      ...hostRangesOfThisWorker(),
      ...(unsandboxed ? { RUNTIME_ISOLATION: 'none' as const } : {}),
      ...env,
    },
  );
  const db = createDb(database.url, 5);
  const secrets = new SecretBox({ current: parseKey(generateKeyText()), previous: [] });
  let logText = '';
  const stream = new Writable({
    write(chunk, _enc, cb) {
      logText += chunk.toString();
      cb();
    },
  });
  const logger = pino({ level: 'trace', redact: REDACT }, stream);
  const ctx: AppContext = { config, db, secrets, databaseUrl: database.url, logger: logger.child({ component: 'pipeline' }) };
  if (options.jobs) {
    ctx.jobs = new PipelineJobs({
      db,
      concurrency: config.PIPELINE_CONCURRENCY,
      organizationLimits: pipelineLimits(config),
      ports: applicationJobPorts(db),
      logger: logger.child({ component: 'jobs' }),
      pollIntervalMs: 200,
      heartbeatIntervalMs: 1000,
      stopTimeoutMs: 5000,
    });
    await ctx.jobs.start();
  }
  if (options.runtime) ctx.runtime = await createRuntime(config, db);
  // Built, then started as main.ts does (the API injected, not listening).
  const composition = composePlatform(ctx, logger);
  const app = await buildApp(ctx, { composition, loggerInstance: logger });
  const running = await start({ composition, logger, workers: Boolean(ctx.jobs), http: { app } });
  const { auth } = createIdentity(ctx);
  let counter = 0;
  const sharedPassword = `pw-${randomBytes(8).toString('hex')}`;
  let sharedHash: Promise<string> | null = null;
  return {
    app,
    ctx,
    databaseUrl: database.url,
    dataDir,
    logs: () => logText,
    async user(overrides = {}) {
      counter++;
      const username = overrides.username ?? `user${counter}-${randomBytes(3).toString('hex')}`;
      // The harness's users share one password, hashed once: scrypt costs ~0.2 s of CPU per hash by design, and
      // the suite makes hundreds of users (each still has its own row and API key).
      sharedHash ??= hashPassword(sharedPassword);
      const created = await db
        .insertInto('users')
        .values({
          id: uuidv7(),
          username,
          email: `${username}@example.com`.toLowerCase(),
          password_hash: await sharedHash,
          is_admin: overrides.admin ?? false,
        })
        .returning(['id', 'email'])
        .executeTakeFirstOrThrow();
      const password = sharedPassword;
      const { key } = await auth.createApiKey(created.id, 'test');
      return { id: created.id, username, email: created.email, password, apiKey: key, headers: { 'x-api-key': key } };
    },
    async close() {
      await running.stop();
      await ctx.jobs?.stop();
      await ctx.runtime?.shutdown();
      await db.destroy();
      await database.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
