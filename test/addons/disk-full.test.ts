/**
 * Issue 31: a full disk when creating an add-on, taking a backup or restoring one. DATA_DIR (where
 * add-ons keep their data and backups) is a small tmpfs the test mounts and fills, as
 * test/operations/disk-full.test.ts does: each request is answered 507 with what to do, leaves no
 * half-made add-on or backup behind, and once space is freed the same requests succeed.
 */
import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdtempSync, rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';
import { createApp, type TestApp } from '../pipeline-build/fixtures.js';
import { sandboxMissing } from '../isolation/fixtures.js';

const isRoot = process.getuid?.() === 0;
const missing = isRoot ? sandboxMissing() : 'not root: cannot mount a small disk';
if (missing) console.warn(missing);

describe.skipIf(missing)('add-ons on a full disk', () => {
  let mountDir = '';
  let h: Harness;
  let a: TestApp;
  const filler = () => join(mountDir, 'filler');
  const api = (method: 'GET' | 'POST', path: string, payload?: object) =>
    h.app.inject({ method, url: `/v1/organizations/${a.orgSlug}/addons${path}`, headers: a.user.headers, ...(payload ? { payload } : {}) });

  /** Writes until the disk refuses. */
  function fill() {
    for (const chunk of [1 << 20, 1 << 12]) {
      const block = Buffer.alloc(chunk, 1);
      try {
        for (;;) appendFileSync(filler(), block);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
      }
    }
    const s = statfsSync(mountDir);
    expect(s.bavail * s.bsize).toBeLessThan(1 << 12);
  }

  beforeAll(async () => {
    mountDir = mkdtempSync(join(tmpdir(), 'slipway-addons-small-disk-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=512m,mode=0755', 'tmpfs', mountDir]);
    h = await createHarness(
      { DATA_DIR: mountDir, ADDONS_BACKUP_INTERVAL_HOURS: 0, ADDONS_RESTORE_DRILL_INTERVAL_HOURS: 0 },
      { jobs: true, runtime: true },
    );
    a = await createApp(h);
  }, 120_000);

  afterAll(async () => {
    await h?.close();
    if (mountDir) {
      execFileSync('umount', ['-l', mountDir]);
      rmSync(mountDir, { recursive: true, force: true });
    }
  });

  it('answers 507 with what to do to a create, a backup and a restore, changes nothing, and works again once space is freed', async () => {
    expect((await api('POST', '', { name: 'db', kind: 'postgres' })).json()).toMatchObject({ status: 'running' });
    const first = await api('POST', '/db/backups');
    expect(first.statusCode, first.body).toBe(201);

    fill();
    const saysWhatToDo = /^The platform's disk is full \(\d+ MiB free.*Free space on DATA_DIR's disk or grow it/;
    const created = await api('POST', '', { name: 'db2', kind: 'postgres' });
    expect(created.statusCode, created.body).toBe(507);
    expect(created.json().message).toMatch(saysWhatToDo);
    expect(created.json().message).toMatch(/the add-on 'db2' was not created/);
    const backup = await api('POST', '/db/backups');
    expect(backup.statusCode, backup.body).toBe(507);
    expect(backup.json().message).toMatch(saysWhatToDo);
    const restore = await api('POST', '/db/restore', { name: 'fork', backup_id: first.json().id });
    expect(restore.statusCode, restore.body).toBe(507);
    expect(restore.json().message).toMatch(/about \d+ MiB needed\): the add-on 'fork' was not restored/);
    // Nothing half made: no new add-on, no new backup record.
    expect((await api('GET', '')).json().map((x: { name: string }) => x.name)).toEqual(['db']);
    expect((await api('GET', '/db/backups')).json().backups.map((b: { id: string }) => b.id)).toEqual([first.json().id]);

    // Space freed: the same requests succeed.
    rmSync(filler());
    // The add-on's own server shares the disk (a full one stops its writes): it serves again.
    await waitFor(
      'the add-on serving again',
      async () => (await api('POST', '/db/query', { sql: 'SELECT 1' })).statusCode === 200,
      30_000,
      200,
    );
    expect((await api('POST', '/db/backups')).statusCode).toBe(201);
    expect((await api('POST', '', { name: 'db2', kind: 'postgres' })).json()).toMatchObject({ status: 'running' });
  }, 120_000);
});
