/**
 * An add-on's server crashes while the platform's database is away (a PostgreSQL restart, a
 * failover): the supervisor can record neither the crash nor the failure of its restart (which
 * cannot record the new server's pid). Both writes ran in the background with nobody handling
 * their rejection, and Node ends a process on an unhandled rejection: the platform went down with
 * its database's blip. Now each is a warning naming the add-on; the process carries on, answers
 * once its database is back, and the add-on serves.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { openCredentials, redisCommands } from '../../src/platform/addons/index.js';
import { INSTANCE_ID_VARIABLE } from '../../src/platform/runtime/local/shim-client.js';
import { processesCarrying } from '../../src/platform/runtime/local/proc-stats.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { setDatabaseReachable } from '../helpers/scratch-database.js';
import { waitFor } from '../helpers/wait.js';
import { createApp, type TestApp } from '../pipeline-build/fixtures.js';
import { sandboxMissing } from '../isolation/fixtures.js';

const missing = sandboxMissing();
if (missing) console.warn(missing);

describe.skipIf(missing)('an add-on server crash while the database is away', () => {
  let h: Harness;
  let a: TestApp;
  let addonId = '';
  const unhandled: unknown[] = [];
  const noteUnhandled = (reason: unknown) => unhandled.push(reason);

  const databaseReachable = (reachable: boolean) => setDatabaseReachable(inject('postgresAdminUrl'), h.databaseUrl, reachable);

  /** The supervisor's warnings that it could not record this add-on's status. */
  const notRecorded = () =>
    h
      .logs()
      .split('\n')
      .filter((line) => line.includes('recording the add-on status failed'))
      .map((line) => JSON.parse(line) as { addonId: string; status: string; detail: string; err: { message: string } })
      .filter((entry) => entry.addonId === addonId);

  beforeAll(async () => {
    process.on('unhandledRejection', noteUnhandled);
    h = await createHarness({ ADDONS_BACKUP_INTERVAL_HOURS: 0, ADDONS_RESTORE_DRILL_INTERVAL_HOURS: 0 }, { jobs: true, runtime: true });
    a = await createApp(h);
  }, 120_000);

  afterAll(async () => {
    if (h) await databaseReachable(true);
    // The restart that could not record its server's pid never took its shim's connection: that shim would hold the
    // stop for its linger time (60 s) before saying the server ended. Ended here.
    for (const pid of addonId ? await processesCarrying(INSTANCE_ID_VARIABLE, new Set([addonId])) : []) process.kill(pid, 'SIGKILL');
    await h?.close();
    process.off('unhandledRejection', noteUnhandled);
  });

  it('logs that it could not record the crash and the restart, never rejects unhandled, and serves once the database is back', async () => {
    const created = await h.app.inject({
      method: 'POST',
      url: `/v1/organizations/${a.orgSlug}/addons`,
      headers: a.user.headers,
      payload: { name: 'cache', kind: 'redis' },
    });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json().status).toBe('running');
    const row = await h.ctx.db.selectFrom('addons').selectAll().where('name', '=', 'cache').executeTakeFirstOrThrow();
    addonId = row.id;

    await databaseReachable(false);
    // The server crashes (its whole sandbox: bubblewrap's process group) while nothing reaches the database.
    process.kill(-row.pid!, 'SIGKILL');
    const warnings = await waitFor('both status writes reported', () => (notRecorded().length >= 2 ? notRecorded() : null), 30_000, 50);
    const crash = warnings.find((w) => /^redis ended \(signal SIGKILL\)/.test(String(w.detail)));
    expect(crash, JSON.stringify(warnings)).toMatchObject({ status: 'failed' });
    // Restarted after a second: the new server runs, but its pid cannot be recorded, so the restart fails, unrecorded too.
    expect(warnings.find((w) => w !== crash)).toMatchObject({ status: 'failed' });
    expect(unhandled).toEqual([]);

    await databaseReachable(true);
    const listed = await waitFor(
      'the API answering again',
      async () => {
        const r = await h.app.inject({ method: 'GET', url: `/v1/organizations/${a.orgSlug}/addons/cache`, headers: a.user.headers });
        return r.statusCode === 200 ? (r.json() as { name: string }) : null;
      },
      30_000,
      100,
    );
    expect(listed.name).toBe('cache');
    // The server the restart started serves (once it has come up: its restart began a second after the crash).
    const credentials = openCredentials(h.ctx.secrets, row.credentials_sealed);
    const answer = await waitFor('the restarted server to answer', () => redisCommands(row.port, credentials, [['PING']]), 30_000, 200);
    expect(answer).toEqual(['PONG']);
    expect(unhandled).toEqual([]);
  }, 120_000);
});
