/**
 * Issue 37, disk full. DATA_DIR (builds, artifacts, instance logs) is a 64 MiB tmpfs the test
 * mounts; PostgreSQL stays on its own disk (the test suite's server): a full PostgreSQL disk is
 * answered 507 by the error mapping (docs/operations.md "Disk space"). Filling DATA_DIR: the
 * operator is warned first (log line, gauge, health), a build then fails as `disk_full` and is
 * counted, the API keeps answering, the previous release keeps serving, no record is left half
 * made, and once space returns the next deploy succeeds.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, mkdtempSync, rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createHarness, type Harness } from '../helpers/harness.js';
import { TestRepo } from '../helpers/git-repo.js';
import { localRuntime } from '../helpers/local-runtime.js';
import { routerGet } from '../helpers/router-get.js';
import { waitFor } from '../helpers/wait.js';
import { chainDeploy, deployVictim } from '../isolation/fixtures.js';
import { setConfig } from '../pipeline-build/fixtures.js';

const METRICS_TOKEN = 'disk-full-metrics-token-0123456789';
const isRoot = process.getuid?.() === 0;
let mountDir: string;
/** A tiny filesystem holding one PostgreSQL tablespace: a full disk under the database's own writes. */
let tablespaceDir: string | undefined;
const TABLESPACE = `slipway_tiny_${process.pid}`;
let h: Harness;
const repos: TestRepo[] = [];

beforeAll(async () => {
  if (!isRoot) return;
  mountDir = mkdtempSync(join(tmpdir(), 'slipway-small-disk-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64m,mode=0755', 'tmpfs', mountDir]);
  h = await createHarness(
    {
      DATA_DIR: mountDir,
      DISK_LOW_FREE_MB: 24,
      DISK_CHECK_INTERVAL_SECONDS: 1,
      METRICS_TOKEN,
      ROUTER_HOST: '127.0.0.1',
      ROUTER_PORT: 0,
      RUNTIME_STOP_GRACE_MS: 2000,
    },
    { runtime: true, jobs: true },
  );
}, 120_000);

afterAll(async () => {
  await h?.close(); // drops the test database, and with it the table in the tablespace
  if (tablespaceDir) {
    await adminQuery(inject('postgresAdminUrl'), `drop tablespace if exists ${TABLESPACE}`);
    execFileSync('umount', ['-l', tablespaceDir]);
    rmSync(tablespaceDir, { recursive: true, force: true });
  }
  for (const repo of repos) repo.remove();
  if (mountDir) {
    execFileSync('umount', ['-l', mountDir]);
    rmSync(mountDir, { recursive: true, force: true });
  }
});

async function adminQuery(url: string, statement: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

const freeBytes = (dir = mountDir) => {
  const s = statfsSync(dir);
  return s.bavail * s.bsize;
};

/** Writes `file` until DATA_DIR has at most `leave` bytes free (0: until the disk refuses). */
function fill(file: string, leave: number, dir = mountDir) {
  for (const chunk of [1 << 20, 1 << 12]) {
    const block = Buffer.alloc(chunk, 1);
    try {
      while (freeBytes(dir) - chunk >= leave) appendFileSync(file, block);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
    }
  }
}

async function pgQuery(url: string, statement: string): Promise<unknown> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return Object.values((await client.query(statement)).rows[0] ?? {})[0];
  } finally {
    await client.end();
  }
}

const health = async () => (await h.app.inject({ method: 'GET', url: '/v1/integrations/health' })).json();
const metrics = async () =>
  (await h.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).body;

describe.skipIf(!isRoot)('a DATA_DIR that fills', () => {
  it('warns first, fails builds as disk_full while reads and the running release go on, and recovers when space returns', async () => {
    const { app, host } = await deployVictim(h, repos);
    const router = localRuntime(h.ctx).router.port;
    expect(await health()).toMatchObject({ status: 'ok', disk: 'ok' });
    expect(await metrics()).toMatch(/^slipway_data_dir_free_bytes \d+/m);

    // Low: between the warning threshold (24 MiB) and empty.
    const filler = join(mountDir, 'filler');
    fill(filler, 16 << 20);
    await waitFor('the low-disk warning', () => /DATA_DIR's disk is low on space/.test(h.logs()), 10_000);
    expect(await health()).toMatchObject({ status: 'ok', disk: 'low' });

    // Full.
    fill(filler, 0);
    expect((await health()).disk).toBe('full');
    await waitFor('the disk-full warning', () => /DATA_DIR's disk is full/.test(h.logs()), 10_000);
    const before = (
      await h.app.inject({ method: 'GET', url: `/v1/applications/${app.appId}/deployments`, headers: app.user.headers })
    ).json();
    const { image, deployment } = await chainDeploy(h, app);
    expect(deployment).toBeNull();
    expect(image).toMatchObject({ error: true, error_code: 'disk_full' });
    expect(image.error_detail).toMatch(/the platform's disk is full/);
    expect(await metrics()).toMatch(/^slipway_disk_full_errors_total\{operation="build"\} [1-9]/m);
    // The API answers reads, the previous release serves, and no record is left half made.
    const after = await h.app.inject({ method: 'GET', url: `/v1/applications/${app.appId}/deployments`, headers: app.user.headers });
    expect(after.statusCode).toBe(200);
    expect(after.json().items).toEqual(before.items);
    expect(await routerGet(router, host)).toEqual({ status: 200, body: 'victim ok' });
    const building = await h.ctx.db.selectFrom('images').select('id').where('status', '=', 'building').execute();
    expect(building).toEqual([]);

    // Space returns: the warning clears and the next deploy goes through.
    rmSync(filler);
    await waitFor('the disk-has-space notice', () => /DATA_DIR's disk has space again/.test(h.logs()), 10_000);
    expect(await health()).toMatchObject({ status: 'ok', disk: 'ok' });
    const again = await chainDeploy(h, app);
    expect(again.deployment?.complete, JSON.stringify(again.deployment ?? again.image)).toBe(true);
    expect(await routerGet(router, host)).toEqual({ status: 200, body: 'victim ok' });
  }, 600_000);

  it("PostgreSQL's own disk full: a write is answered 507 and counted, reads go on, and writes work again when space returns", async () => {
    const { app } = await deployVictim(h, repos);
    // The configuration table moves onto a 4 MiB tmpfs the database server's user owns, which is then filled.
    tablespaceDir = mkdtempSync(join(tmpdir(), 'slipway-tiny-tablespace-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m,mode=0700', 'tmpfs', tablespaceDir]);
    const adminUrl = new URL(inject('postgresAdminUrl'));
    adminUrl.pathname = new URL(h.databaseUrl).pathname;
    const serverUser = (await pgQuery(adminUrl.toString(), `select setting from pg_settings where name = 'data_directory'`)) as string;
    execFileSync('chown', ['--reference', serverUser, tablespaceDir]);
    await adminQuery(adminUrl.toString(), `create tablespace ${TABLESPACE} location '${tablespaceDir}'`);
    await adminQuery(adminUrl.toString(), `alter table config_vars set tablespace ${TABLESPACE}`);
    const filler = join(tablespaceDir, 'filler');
    fill(filler, 0, tablespaceDir);

    let refused: { statusCode: number; body: string; json(): { status: number; message: string } } | null = null;
    for (let i = 0; i < 50 && !refused; i++) {
      const res = await h.app.inject({
        method: 'POST',
        url: `/v1/configurations/${app.appId}`,
        headers: app.user.headers,
        payload: { name: `FILLER_${i}`, value: randomBytes(15_000).toString('hex'), secret: false, buildtime: false },
      });
      if (res.statusCode !== 201) refused = res;
    }
    expect(refused?.statusCode, refused?.body).toBe(507);
    expect(refused?.json()).toEqual({
      status: 507,
      message: "The platform's disk is full; the change was not made. Retry once space is freed",
    });
    expect(await metrics()).toMatch(/^slipway_disk_full_errors_total\{operation="api"\} [1-9]/m);
    // Reads answer; the platform did not go down.
    const read = await h.app.inject({ method: 'GET', url: `/v1/configurations/${app.appId}`, headers: app.user.headers });
    expect(read.statusCode).toBe(200);
    expect((await health()).status).toBe('ok');

    rmSync(filler);
    await setConfig(h, app, 'AFTER_SPACE_RETURNED', 'yes');
  }, 300_000);
});
