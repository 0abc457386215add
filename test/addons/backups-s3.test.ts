import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removePurgedAddonObjects } from '../../src/modules/addons/backups-s3.js';
import { objectStoreOf } from '../../src/modules/addons/wire.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { TestRepo } from '../helpers/git-repo.js';
import { localRuntime } from '../helpers/local-runtime.js';
import { routerGet } from '../helpers/router-get.js';
import { startTestS3, type TestS3 } from '../helpers/s3-server.js';
import { waitFor } from '../helpers/wait.js';
import { createApp, type TestApp } from '../pipeline-build/fixtures.js';
import { chainDeploy, sandboxMissing } from '../isolation/fixtures.js';
import { SERVER } from './fixtures.js';

/**
 * Issue 31: a Postgres add-on's backups in an S3-compatible store. The add-on's sandbox stays
 * offline; the platform uploads what it streams out. Proven against s3rver behind a front that
 * checks every signature independently (test/helpers/s3-server.ts): a backup lands in the bucket,
 * the local repository is then removed, and a restore to a time between two writes and a drill
 * work from the store alone; a refused secret fails a backup with a clear reason that holds no
 * secret; retention removes the objects.
 */
const missing = sandboxMissing();
if (missing) console.warn(missing);

describe.skipIf(missing)('Postgres add-on backups in an S3-compatible store', () => {
  let h: Harness;
  let s3: TestS3;
  let repo: TestRepo;
  let a: TestApp;
  let host = '';
  let addonId = '';
  const secret = () => 'test-secret-b2f0c9d1e7a34a8c';
  const bodies: string[] = [];

  const api = async (method: 'GET' | 'POST', path: string, payload?: object) => {
    const r = await h.app.inject({
      method,
      url: `/v1/organizations/${a.orgSlug}/addons${path}`,
      headers: a.user.headers,
      ...(payload ? { payload } : {}),
    });
    bodies.push(r.body);
    return r;
  };
  const write = async (v: string) => (await routerGet(localRuntime(h.ctx).router.port, host, `/write?v=${v}`, 30_000)).body;
  const notes = async (addon: string) =>
    (await api('POST', `/${addon}/query`, { sql: 'SELECT v FROM notes ORDER BY v' })).json().rows.flat();
  const stored = () => s3.keys(`slipway/${addonId}/`);

  beforeAll(async () => {
    s3 = await startTestS3();
    h = await createHarness(
      {
        ROUTER_HOST: '127.0.0.1',
        ROUTER_PORT: 0,
        ADDONS_BACKUP_INTERVAL_HOURS: 0,
        ADDONS_RESTORE_DRILL_INTERVAL_HOURS: 0,
        BACKUP_S3_ENDPOINT: s3.endpoint,
        BACKUP_S3_BUCKET: s3.bucket,
        BACKUP_S3_ACCESS_KEY_ID: s3.accessKeyId,
        BACKUP_S3_SECRET_ACCESS_KEY: secret(),
      },
      { jobs: true, runtime: true },
    );
    repo = new TestRepo();
    repo.commit({ 'server.py': SERVER, Procfile: 'web: python3 server.py\n' });
    a = await createApp(h, { github_repository: repo.dir, auto_deploy_branch: 'main', health_check_path: '/', deployment_timeout: 60 });
    const { image, deployment } = await chainDeploy(h, a);
    expect(deployment?.complete, JSON.stringify(deployment ?? image)).toBe(true);
    host = new URL(deployment.deploy_metadata.url).hostname;
    const created = await api('POST', '', { name: 'db', kind: 'postgres' });
    expect(created.statusCode, created.body).toBe(201);
    addonId = created.json().id;
    const attached = await api('POST', '/db/attachments', { application_id: a.appId });
    expect(attached.statusCode, attached.body).toBe(201);
    const deploymentId = attached.json().releases[0].deployment_id;
    await waitFor(
      'the deployment with DATABASE_URL',
      async () => {
        const r = (await h.app.inject({ method: 'GET', url: `/v1/deployments/${deploymentId}/detail`, headers: a.user.headers })).json();
        return r.complete ? r : null;
      },
      90_000,
      100,
    );
  }, 240_000);

  afterAll(async () => {
    await h?.close();
    await s3?.close();
    repo?.remove();
  });

  it('uploads a backup and the WAL; with the local repository gone, restores to a time between two writes and drills from the store alone', async () => {
    expect(await write('first')).toMatch(/INSERT 0 1$/);
    expect(await write('second')).toMatch(/INSERT 0 1$/);
    const backup = await api('POST', '/db/backups');
    expect(backup.statusCode, backup.body).toBe(201);
    expect(backup.json()).toMatchObject({ status: 'completed', location: 's3', detail: null });
    const id = backup.json().id;
    // The bucket holds it (listed by the test itself), and the local repository no longer does.
    expect(await stored()).toEqual(expect.arrayContaining([`slipway/${addonId}/base/${id}.tar`, `slipway/${addonId}/base/${id}.json`]));
    const local = join(h.ctx.config.dataDir, 'addons', addonId, 'repo');
    expect(existsSync(join(local, 'base', id))).toBe(false);
    expect((await stored()).some((k) => /\/wal\/[0-9A-F]{24}$/.test(k))).toBe(true);
    // Every archived segment is in the store: what the local repository still holds is shipped.
    const shippedWal = (await stored()).filter((k) => k.includes('/wal/')).map((k) => k.slice(k.lastIndexOf('/') + 1));
    for (const name of readdirSync(join(local, 'wal')).filter((n) => !n.endsWith('.part'))) expect(shippedWal).toContain(name);

    expect(await write('third')).toMatch(/INSERT 0 1$/);
    const between = new Date().toISOString();
    expect(await write('fourth')).toMatch(/INSERT 0 1$/);
    rmSync(local, { recursive: true, force: true });

    const listed = (await api('GET', '/db/backups')).json();
    expect(listed.backups.map((b: { location: string }) => b.location)).toEqual(['s3']);
    const restore = await api('POST', '/db/restore', { name: 'early', time: between });
    expect(restore.statusCode, restore.body).toBe(202);
    const fork = await waitFor(
      'the restore into early',
      async () => {
        const r = (await api('GET', '/early')).json();
        return r.status === 'creating' ? null : r;
      },
      120_000,
      100,
    );
    expect(fork.status, JSON.stringify(fork)).toBe('running');
    expect(await notes('early')).toEqual(['first', 'second', 'third']);

    const drill = await api('POST', '/db/drills');
    expect(drill.statusCode, drill.body).toBe(200);
    expect(drill.json()).toMatchObject({ ok: true, backup_id: id, detail: null });
    expect(Object.entries(drill.json().tables)).toContainEqual([expect.stringMatching(/\.public\.notes$/), 2]);
    expect(existsSync(join(h.ctx.config.dataDir, 'addons', addonId, 'drill-backup'))).toBe(false);
  }, 240_000);

  it('a store that refuses the secret fails the backup with a clear reason that holds no secret', async () => {
    const refusedBefore = s3.refused;
    s3.secret = 'another-secret-the-store-expects';
    try {
      const backup = await api('POST', '/db/backups');
      expect(backup.statusCode, backup.body).toBe(409);
      expect(backup.json().message).toMatch(/refused the signature \(SignatureDoesNotMatch\): check BACKUP_S3_SECRET_ACCESS_KEY/);
    } finally {
      s3.secret = secret();
    }
    expect(s3.refused).toBeGreaterThan(refusedBefore);
    const failed = (await api('GET', '/db/backups')).json().backups.pop();
    expect(failed).toMatchObject({ status: 'failed', location: 'local' });
    expect(failed.detail).toMatch(/^uploading the backup failed: the backup store: .*SignatureDoesNotMatch/);
    expect(existsSync(join(h.ctx.config.dataDir, 'addons', addonId, 'repo', 'base', failed.id))).toBe(false);
    for (const text of [...bodies, h.logs()]) expect(text).not.toContain(secret());
  }, 120_000);

  it('retention removes expired backups and the WAL older than the oldest backup kept from the store', async () => {
    const before = await stored();
    const old = (await api('GET', '/db/backups')).json().backups as Array<{ id: string }>;
    await h.ctx.db
      .updateTable('addon_backups')
      .set({ finished_at: new Date(Date.now() - 30 * 86_400_000), started_at: new Date(Date.now() - 30 * 86_400_000) })
      .where('addon_id', '=', addonId)
      .execute();
    expect(await write('fifth')).toMatch(/INSERT 0 1$/);
    const backup = await api('POST', '/db/backups');
    expect(backup.statusCode, backup.body).toBe(201);
    const after = await stored();
    expect((await api('GET', '/db/backups')).json().backups.map((b: { id: string }) => b.id)).toEqual([backup.json().id]);
    for (const b of old) expect(after.filter((k) => k.includes(b.id))).toEqual([]);
    const row = await h.ctx.db.selectFrom('addon_backups').select('start_wal').where('id', '=', backup.json().id).executeTakeFirstOrThrow();
    const wal = after.filter((k) => /\/wal\/[0-9A-F]{24}$/.test(k)).map((k) => k.slice(-24));
    expect(wal.length).toBeGreaterThan(0);
    expect(wal.every((n) => n.slice(8) >= row.start_wal!.slice(8))).toBe(true);
    expect(before.some((k) => /\/wal\/[0-9A-F]{24}$/.test(k) && k.slice(-16) < row.start_wal!.slice(8))).toBe(true);
  }, 120_000);

  it('removes a purged add-on’s objects once they are past retention, and nothing of a live add-on, a recent purge or another tool', async () => {
    // A purged add-on leaves objects under an id no record has; the bucket may hold others' files too.
    const purged = uuidv7();
    const recent = uuidv7();
    const keys = {
      purged: [`slipway/${purged}/base/${uuidv7()}.tar`, `slipway/${purged}/base/x.json`, `slipway/${purged}/wal/000000010000000000000003`],
      recent: [`slipway/${recent}/wal/000000010000000000000002`],
      foreign: ['slipway/notes/readme.txt'],
    };
    for (const key of [...keys.purged, ...keys.recent, ...keys.foreign]) await s3.put(key, 'bytes');
    const live = await stored();
    expect(live.length).toBeGreaterThan(0);
    // All of them older than the retention period, but the recent purge's newest object.
    s3.age([...keys.purged, ...keys.foreign, ...live, keys.recent[0]!], h.ctx.config.ADDONS_BACKUP_RETENTION_DAYS + 1);
    await s3.put(`slipway/${recent}/wal/000000010000000000000003`, 'bytes');

    // What the backups sweep runs hourly; it finds the add-on ids through the store's common prefixes.
    const removed = await removePurgedAddonObjects(h.ctx.db, objectStoreOf(h.ctx.config), h.ctx.config.ADDONS_BACKUP_RETENTION_DAYS);
    expect(removed).toEqual([purged]);
    expect(await s3.keys(`slipway/${purged}/`)).toEqual([]);
    expect(await s3.keys(`slipway/${recent}/`)).toHaveLength(2);
    expect(await s3.keys('slipway/notes/')).toEqual(keys.foreign);
    // (The sweeper may ship a new segment meanwhile: what was there stays.)
    expect(await stored()).toEqual(expect.arrayContaining(live));
  });
});
