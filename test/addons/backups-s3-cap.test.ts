import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../helpers/harness.js';
import { startTestS3, type TestS3 } from '../helpers/s3-server.js';
import { publishedEvents } from '../helpers/published-events.js';
import { waitFor } from '../helpers/wait.js';
import { createApp, type TestApp } from '../pipeline-build/fixtures.js';
import { sandboxMissing } from '../isolation/fixtures.js';

/**
 * Issue 31: BACKUP_S3_WAL_CAP_MB bounds one Postgres add-on's WAL in the shared store. An add-on
 * that writes past it gets a failed backup entry that says so plainly, with `addon.backup_failed`;
 * its WAL past the cap stays in its own directory, where a restore still finds it; another
 * add-on's backups and WAL shipping go on. Its own harness: the cap is a setting, and a small one
 * would stop test/addons/backups-s3.test.ts's restores from the store alone.
 */
const missing = sandboxMissing();
if (missing) console.warn(missing);

const CAP_MB = 40;

describe.skipIf(missing)('the per-add-on cap on WAL in the S3-compatible store', () => {
  let h: Harness;
  let s3: TestS3;
  let a: TestApp;
  let b: TestApp;

  const api = (t: TestApp, method: 'GET' | 'POST', path: string, payload?: object) =>
    h.app.inject({ method, url: `/v1/organizations/${t.orgSlug}/addons${path}`, headers: t.user.headers, ...(payload ? { payload } : {}) });
  const sqlOn = async (t: TestApp, addon: string, sql: string) => {
    const r = await api(t, 'POST', `/${addon}/query`, { sql });
    expect(r.statusCode, r.body).toBe(200);
    return r.json().rows;
  };
  const running = (t: TestApp, name: string) =>
    waitFor(
      `add-on ${name} settled`,
      async () => {
        const view = (await api(t, 'GET', `/${name}`)).json();
        return view.status === 'creating' ? null : view;
      },
      120_000,
      100,
    );
  /** The bytes of an add-on's WAL objects in the store. */
  const walBytes = async (addonId: string) => {
    const sizes = await s3.sizes(`slipway/${addonId}/wal/`);
    return Object.values(sizes).reduce((sum, n) => sum + n, 0);
  };

  beforeAll(async () => {
    s3 = await startTestS3();
    h = await createHarness(
      {
        ADDONS_BACKUP_INTERVAL_HOURS: 0,
        ADDONS_RESTORE_DRILL_INTERVAL_HOURS: 0,
        BACKUP_S3_ENDPOINT: s3.endpoint,
        BACKUP_S3_BUCKET: s3.bucket,
        BACKUP_S3_ACCESS_KEY_ID: s3.accessKeyId,
        BACKUP_S3_SECRET_ACCESS_KEY: s3.secret,
        BACKUP_S3_WAL_CAP_MB: CAP_MB,
      },
      { jobs: true, runtime: true },
    );
    [a, b] = await Promise.all([createApp(h), createApp(h)]);
    // A subscription, so the organization's events are recorded (its address is never reached).
    await h.ctx.db
      .insertInto('webhooks')
      .values({
        id: uuidv7(),
        organization_id: a.orgId,
        url: 'http://127.0.0.1:9/',
        events: ['addon.backup_failed'],
        secret_sealed: h.ctx.secrets.seal('k'),
      })
      .execute();
    for (const [t, name] of [
      [a, 'heavy'],
      [b, 'light'],
    ] as const) {
      const created = await api(t, 'POST', '', { name, kind: 'postgres' });
      expect(created.statusCode, created.body).toBe(201);
    }
    for (const [t, name] of [
      [a, 'heavy'],
      [b, 'light'],
    ] as const)
      expect((await running(t, name)).status).toBe('running');
  }, 180_000);

  afterAll(async () => {
    await h?.close();
    await s3?.close();
  });

  it('stops shipping at the cap with a plain failed entry and addon.backup_failed; a restore still reaches past it; another add-on is untouched', async () => {
    const heavy = (await api(a, 'GET', '/heavy')).json();
    const light = (await api(b, 'GET', '/light')).json();
    await sqlOn(a, 'heavy', "CREATE TABLE notes (v text); INSERT INTO notes VALUES ('before')");
    expect((await api(a, 'POST', '/heavy/backups')).statusCode).toBe(201);
    // Rows of 1,800 bytes stay inline, uncompressed: about 65 MB of WAL, past a 40 MiB cap.
    await sqlOn(a, 'heavy', "CREATE TABLE big AS SELECT repeat('x', 1800) AS v FROM generate_series(1, 36000)");
    const second = await api(a, 'POST', '/heavy/backups');
    expect(second.statusCode, second.body).toBe(201);
    expect(second.json()).toMatchObject({ status: 'completed', location: 's3' });

    const entries = (await api(a, 'GET', '/heavy/backups')).json().backups as Array<{ id: string; status: string; detail: string | null }>;
    const stopped = entries.filter((e) => e.status === 'failed');
    expect(stopped.length).toBeGreaterThanOrEqual(1);
    for (const e of stopped)
      expect(e.detail).toMatch(
        new RegExp(
          `^shipping WAL to the backup store stopped: this add-on's WAL there reached its cap of ${CAP_MB} MiB \\(BACKUP_S3_WAL_CAP_MB\\)`,
        ),
      );
    expect(await walBytes(heavy.id)).toBeLessThanOrEqual(CAP_MB * 1024 * 1024);
    // One event per entry, each naming it.
    const events = (await publishedEvents(h.ctx.db, a.orgId, 'addon.backup_failed')).map((e) => e.data);
    expect(events.map((e) => e.backup_id).sort()).toEqual(stopped.map((e) => e.id).sort());
    expect(events.every((e) => e.addon_id === heavy.id && e.detail === stopped[0]!.detail)).toBe(true);

    // Past the cap the WAL stays local: a restore to a time after it still gets there.
    await sqlOn(a, 'heavy', "INSERT INTO notes VALUES ('after')");
    const time = new Date().toISOString();
    await sqlOn(a, 'heavy', "INSERT INTO notes VALUES ('later')");
    const restore = await api(a, 'POST', '/heavy/restore', { name: 'heavy-then', time });
    expect(restore.statusCode, restore.body).toBe(202);
    const fork = await running(a, 'heavy-then');
    expect(fork.status, JSON.stringify(fork)).toBe('running');
    expect((await sqlOn(a, 'heavy-then', 'SELECT v FROM notes ORDER BY v')).flat()).toEqual(['after', 'before']);

    // The other organization's add-on: its backup and WAL go to the store, no failure.
    await sqlOn(b, 'light', 'CREATE TABLE t (v int); INSERT INTO t VALUES (1)');
    const lightBackup = await api(b, 'POST', '/light/backups');
    expect(lightBackup.json()).toMatchObject({ status: 'completed', location: 's3' });
    expect(await walBytes(light.id)).toBeGreaterThan(0);
    expect((await api(b, 'GET', '/light/backups')).json().backups.map((e: { status: string }) => e.status)).toEqual(['completed']);
  }, 240_000);
});
