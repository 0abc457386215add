/**
 * Issue 31 on RUNTIME=kubernetes with BACKUP_S3_*: a Postgres add-on's backups, restores and
 * drills are CloudNativePG's own, through the HTTP API against the fake API server (no operator
 * here: the test sets a Backup's status as the operator would; the fake readies a Cluster and runs
 * its instance pods' `exec` for real, here against a PostgreSQL of this file's own standing in for
 * the instance's server: its own databases, WAL archiving on).
 */
import { randomBytes } from 'node:crypto';
import { connect, createServer, type Server } from 'node:net';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { sealCredentials } from '../../src/platform/addons/index.js';
import { embeddedSuperuserUrl, startEmbeddedPostgres } from '../../src/platform/db/embedded.js';
import type { KubernetesRuntime } from '../../src/platform/runtime/kubernetes/kubernetes-runtime.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { FakeKubeApi } from '../helpers/fake-kube-api.js';
import { publishedEvents } from '../helpers/published-events.js';
import { setDatabaseReachable } from '../helpers/scratch-database.js';
import { waitFor } from '../helpers/wait.js';
import { createApp, type TestApp } from '../pipeline-build/fixtures.js';

const SECRET_KEY = `s3-secret-${randomBytes(8).toString('hex')}`;
let h: Harness;
let kube: FakeKubeApi;
let kubeconfig: string;
let t: TestApp;
let namespace: string;
let base: string;
let addonId: string;
let proxy: Server | null = null;
/** The instance pods' server: an embedded PostgreSQL of this file (socket only; a loopback relay gives the pods TCP). */
let pod: { dir: string; stop: () => Promise<void>; superuser: string; database: string; user: string; password: string } | null = null;

const podQuery = async (sql: string, database = 'postgres') => {
  const client = new pg.Client({ connectionString: embeddedSuperuserUrl(pod!.dir, podPort, database) });
  await client.connect();
  try {
    return (await client.query(sql)).rows;
  } finally {
    await client.end();
  }
};
const podPort = 41000 + Math.floor(Math.random() * 9000);

/**
 * The server exec'd scripts reach: the add-on's database (the platform role's, standing in for the
 * application's) holding `items`, a second database of the member's holding `extra`, and WAL
 * archiving on (each segment "archived" by `true`, so pg_stat_archiver moves as CloudNativePG's would).
 */
async function startPodServer() {
  const dir = join(tmpdir(), `slipway-kube-pod-${randomBytes(4).toString('hex')}`);
  let server = await startEmbeddedPostgres(dir, podPort);
  const app = new URL(server.url);
  pod = {
    dir,
    stop: () => server.stop(),
    superuser: 'postgres',
    database: app.pathname.slice(1),
    user: app.username,
    password: decodeURIComponent(app.password),
  };
  await podQuery("ALTER SYSTEM SET archive_mode = 'on'");
  await podQuery("ALTER SYSTEM SET archive_command = 'true'");
  await server.stop();
  server = await startEmbeddedPostgres(dir, podPort);
  pod.stop = () => server.stop();
  const asApp = new pg.Client({ connectionString: server.url });
  await asApp.connect();
  await asApp.query("CREATE TABLE items (id int, name text); INSERT INTO items VALUES (1, 'first'), (2, 'second')");
  await asApp.end();
  await podQuery('CREATE DATABASE other');
  await podQuery('CREATE TABLE extra (v int); INSERT INTO extra VALUES (1)', 'other');
  const socket = join(decodeURIComponent(new URL(server.url).hostname), `.s.PGSQL.${podPort}`);
  proxy = createServer((client) => {
    const upstream = connect({ path: socket });
    client.pipe(upstream).pipe(client);
    const close = () => (client.destroy(), upstream.destroy());
    client.on('error', close);
    upstream.on('error', close);
  });
  await new Promise<void>((resolve) => proxy!.listen(0, '127.0.0.1', resolve));
  const superuserPassword = decodeURIComponent(new URL(embeddedSuperuserUrl(dir, podPort)).password);
  kube.execEnv = {
    PGHOST: '127.0.0.1',
    PGPORT: String((proxy.address() as { port: number }).port),
    PGUSER: pod.superuser,
    PGPASSWORD: superuserPassword,
  };
}

const addons = (method: 'GET' | 'POST' | 'PUT', path: string, payload?: object) =>
  h.app.inject({ method, url: `/v1/organizations/${t.orgSlug}/addons${path}`, headers: t.user.headers, ...(payload ? { payload } : {}) });

const running = (name: string) =>
  waitFor(
    `add-on ${name} running`,
    async () => {
      const view = (await addons('GET', `/${name}`)).json();
      return view.status === 'running' ? view : null;
    },
    20_000,
    50,
  );

const listed = async () => (await addons('GET', '/db/backups')).json();

beforeAll(async () => {
  kube = await FakeKubeApi.start({ tickMs: 20 });
  kubeconfig = join(tmpdir(), `slipway-kubeconfig-${randomBytes(4).toString('hex')}.json`);
  writeFileSync(kubeconfig, kube.kubeConfig().exportConfig());
  h = await createHarness(
    {
      RUNTIME: 'kubernetes',
      KUBECONFIG: kubeconfig,
      KUBERNETES_NAMESPACE_PREFIX: 'apps-',
      BACKUP_S3_ENDPOINT: 'https://s3.example.test',
      BACKUP_S3_BUCKET: 'addon-backups',
      BACKUP_S3_PREFIX: 'slipway/',
      BACKUP_S3_REGION: 'eu-west-1',
      BACKUP_S3_ACCESS_KEY_ID: 'AKIDEXAMPLE',
      BACKUP_S3_SECRET_ACCESS_KEY: SECRET_KEY,
    },
    { jobs: true, runtime: true },
  );
  t = await createApp(h);
  namespace = `apps-${t.orgSlug}`;
  expect((await addons('POST', '', { name: 'db', kind: 'postgres' })).statusCode).toBe(201);
  addonId = (await running('db')).id;
  // A subscription, so the organization's events are recorded (its address is never reached).
  await h.ctx.db
    .insertInto('webhooks')
    .values({
      id: uuidv7(),
      organization_id: t.orgId,
      url: 'http://127.0.0.1:9/',
      events: ['addon.backup_failed', 'addon.restored', 'addon.restore_drill_failed'],
      secret_sealed: h.ctx.secrets.seal('k'),
    })
    .execute();
  base = kube.list('clusters', namespace)[0]!.metadata.name;
  await startPodServer();
  // The add-on's credentials are the pod server's application role.
  await h.ctx.db
    .updateTable('addons')
    .set({
      credentials_sealed: sealCredentials(h.ctx.secrets, {
        user: pod!.user,
        password: pod!.password,
        database: pod!.database,
        adminUser: 'postgres',
        adminPassword: 'x',
      }),
    })
    .where('id', '=', addonId)
    .execute();
}, 90_000);

afterAll(async () => {
  await h?.close();
  await kube?.stop();
  proxy?.close();
  await pod?.stop();
  if (pod) rmSync(pod.dir, { recursive: true, force: true });
  if (kubeconfig) rmSync(kubeconfig, { force: true });
});

describe('Postgres add-on backups on Kubernetes (CloudNativePG, BACKUP_S3_*)', () => {
  it('gives the Cluster the object store (its keys in a Secret the platform writes) and a ScheduledBackup', async () => {
    const cluster = kube.get('clusters', namespace, base)!;
    expect(cluster.spec.backup).toEqual({
      retentionPolicy: '7d',
      barmanObjectStore: {
        destinationPath: `s3://addon-backups/slipway/${addonId}`,
        endpointURL: 'https://s3.example.test',
        s3Credentials: {
          accessKeyId: { name: 'slipway-addon-backups', key: 'ACCESS_KEY_ID' },
          secretAccessKey: { name: 'slipway-addon-backups', key: 'SECRET_ACCESS_KEY' },
          region: { name: 'slipway-addon-backups', key: 'REGION' },
        },
        wal: { compression: 'gzip' },
        data: { compression: 'gzip' },
      },
    });
    const keys = kube.get('secrets', namespace, 'slipway-addon-backups')!;
    expect(Buffer.from(keys.data.SECRET_ACCESS_KEY, 'base64').toString()).toBe(SECRET_KEY);
    expect(Buffer.from(keys.data.REGION, 'base64').toString()).toBe('eu-west-1');
    expect(kube.get('scheduledbackups', namespace, base)!.spec).toMatchObject({ schedule: '0 0 0 * * *', cluster: { name: base } });
  });

  it('takes a backup as a Backup resource whose phase the record follows; a failure is said without the keys; scheduled ones are recorded', async () => {
    const made = await addons('POST', '/db/backups');
    expect(made.statusCode, made.body).toBe(201);
    expect(made.json()).toMatchObject({ status: 'running', trigger: 'manual' });
    const [backup] = kube.list('backups', namespace);
    expect(backup!.metadata.uid).toBe(made.json().id);
    expect(backup!.spec).toEqual({ cluster: { name: base }, method: 'barmanObjectStore' });
    const stoppedAt = new Date(Date.now() - 60_000).toISOString();
    kube.setStatus('backups', namespace, backup!.metadata.name, {
      phase: 'completed',
      backupId: '20261126T100000',
      beginWal: '000000010000000000000004',
      startedAt: new Date(Date.now() - 90_000).toISOString(),
      stoppedAt,
    });
    await waitFor('the backup completed', async () => (await listed()).backups[0]?.status === 'completed', 10_000, 50);
    expect((await listed()).backups[0]).toMatchObject({ id: backup!.metadata.uid, finished: stoppedAt, detail: null });

    const second = (await addons('POST', '/db/backups')).json();
    const failing = kube.list('backups', namespace).find((b) => b.metadata.uid === second.id)!;
    kube.setStatus('backups', namespace, failing.metadata.name, {
      phase: 'failed',
      error: `barman-cloud-backup: 403 for key AKIDEXAMPLE / ${SECRET_KEY}\nmore`,
    });
    const failed = await waitFor(
      'the backup failed',
      async () => (await listed()).backups.find((b: { id: string; status: string }) => b.id === second.id && b.status === 'failed'),
      10_000,
      50,
    );
    expect(failed.detail).toBe('CloudNativePG: barman-cloud-backup: 403 for key [hidden] / [hidden]');
    expect(await publishedEvents(h.ctx.db, t.orgId, 'addon.backup_failed')).toHaveLength(1);

    // One the operator made from the ScheduledBackup: recorded when the platform reads the cluster.
    kube.seed('backups', {
      apiVersion: 'postgresql.cnpg.io/v1',
      kind: 'Backup',
      metadata: {
        name: `${base}-20261126000000`,
        namespace,
        labels: { 'cnpg.io/cluster': base, 'cnpg.io/scheduled-backup': base },
      },
      spec: { cluster: { name: base }, method: 'barmanObjectStore' },
    });
    const scheduled = kube.get('backups', namespace, `${base}-20261126000000`)!;
    kube.setStatus('backups', namespace, scheduled.metadata.name, {
      phase: 'completed',
      backupId: '20261126T110000',
      stoppedAt: new Date().toISOString(),
    });
    expect((await listed()).backups.map((b: { trigger: string; status: string }) => `${b.trigger}:${b.status}`)).toEqual([
      'manual:completed',
      'manual:failed',
      'scheduled:completed',
    ]);
  });

  it('restores into a fork: a Cluster recovered from the source’s object store, its own passwords, running once the Cluster is ready', async () => {
    const first = (await listed()).backups[0];
    const fork = await addons('POST', '/db/restore', { name: 'db-fork', backup_id: first.id });
    expect(fork.statusCode, fork.body).toBeLessThan(300);
    const forkView = await running('db-fork');
    // Restored, once its Cluster is ready.
    const restored = await waitFor('the addon.restored event', async () => {
      const all = (await publishedEvents(h.ctx.db, t.orgId, 'addon.restored')).map((e) => e.data);
      return all.length ? all : null;
    });
    expect(restored).toContainEqual(expect.objectContaining({ addon_id: forkView.id, restored_from: `db at backup ${first.id}` }));
    const forkCluster = kube.list('clusters', namespace).find((c) => c.metadata.labels['slipway.dev/addon-id'] === forkView.id)!;
    expect(forkCluster.spec.bootstrap.recovery).toMatchObject({
      source: 'origin',
      recoveryTarget: { backupID: '20261126T100000', targetImmediate: true },
    });
    expect(forkCluster.spec.externalClusters).toEqual([
      {
        name: 'origin',
        barmanObjectStore: expect.objectContaining({ destinationPath: `s3://addon-backups/slipway/${addonId}`, serverName: base }),
      },
    ]);
    // The fork's own backups go to its own path; its password is not the source's.
    expect(forkCluster.spec.backup.barmanObjectStore.destinationPath).toBe(`s3://addon-backups/slipway/${forkView.id}`);
    const password = (name: string) => kube.get('secrets', namespace, name)!.data.password;
    expect(password(forkCluster.spec.bootstrap.recovery.secret.name)).not.toBe(password(`${base}-credentials`));

    // To a time inside the window: targetTime, once the source's primary switched WAL and archived it
    // (a recent time is otherwise only in a segment CloudNativePG has not archived yet).
    const archivedBefore = Number((await podQuery('SELECT archived_count FROM pg_stat_archiver'))[0].archived_count);
    const time = new Date(Date.now() - 1000).toISOString();
    expect((await addons('POST', '/db/restore', { name: 'db-then', time })).statusCode).toBeLessThan(300);
    const then = await running('db-then');
    const switched = kube.execs.find((e) => e.pod === `${base}-1` && e.command.join(' ').includes('pg_switch_wal'));
    expect(switched).toMatchObject({ namespace, container: 'postgres' });
    expect(Number((await podQuery('SELECT archived_count FROM pg_stat_archiver'))[0].archived_count)).toBeGreaterThan(archivedBefore);
    const thenCluster = kube.list('clusters', namespace).find((c) => c.metadata.labels['slipway.dev/addon-id'] === then.id)!;
    expect(thenCluster.spec.bootstrap.recovery.recoveryTarget).toEqual({ targetTime: time });
  });

  it('drills in a scratch Cluster: rows counted and the check query run as the app role through exec, the scratch deleted; a failing check sends the event', async () => {
    // Every database of the restored copy is counted (the member's second one too), as the local drill does.
    expect((await addons('PUT', '/db/drills/check', { query: 'SELECT name FROM items ORDER BY id' })).statusCode).toBe(200);
    const drill = await addons('POST', '/db/drills');
    expect(drill.statusCode, drill.body).toBe(200);
    expect(drill.json()).toMatchObject({
      ok: true,
      detail: null,
      tables: { [`${pod!.database}.public.items`]: 2, 'other.public.extra': 1 },
      check: { rows: 2, first_value: 'first' },
    });
    const exec = kube.execs.at(-1)!;
    expect(exec).toMatchObject({ pod: `${base}-drill-1`, container: 'postgres' });
    expect(exec.command.join(' ')).not.toContain(pod!.password);
    expect(kube.get('clusters', namespace, `${base}-drill`)).toBeUndefined();
    expect((await addons('GET', '/db')).json().last_proven_restorable_at).not.toBeNull();

    // A check the application's role may not run: the drill fails and says so.
    await addons('PUT', '/db/drills/check', { query: "SELECT pg_read_file('/etc/hostname')" });
    const refused = (await addons('POST', '/db/drills')).json();
    expect(refused).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/^the check query failed on the restored copy: .*permission denied/),
    });
    expect(await publishedEvents(h.ctx.db, t.orgId, 'addon.restore_drill_failed')).toHaveLength(1);
  }, 30_000);

  it('records a release’s restore point on the add-on through exec in its primary pod (pg_create_restore_point as postgres)', async () => {
    const runtime = h.ctx.runtime as KubernetesRuntime;
    const name = `slipway-${Date.now()}-v7`;
    const lsn = await runtime.addonRestorePoint({ id: addonId, name: 'db', organizationSlug: t.orgSlug }, name);
    expect(lsn).toMatch(/^[0-9A-F]+\/[0-9A-F]+$/);
    const exec = kube.execs.at(-1)!;
    expect(exec).toMatchObject({ pod: `${base}-1`, container: 'postgres' });
    // The name travels on standard input, never in the command the API server sees.
    expect(exec.command.join(' ')).not.toContain(name);
  });

  it('applies the retention to the records: past ADDONS_BACKUP_RETENTION_DAYS they and their Backup resources go, the newest completed stays', async () => {
    const old = (await listed()).backups as Array<{ id: string }>;
    expect(old.length).toBeGreaterThanOrEqual(3);
    await h.ctx.db
      .updateTable('addon_backups')
      .set({ started_at: sql`started_at - interval '30 days'`, finished_at: sql`finished_at - interval '30 days'` })
      .where('addon_id', '=', addonId)
      .execute();
    // Every one expired, but the newest completed one is kept: the window never empties.
    const newestCompleted = (old as Array<{ id: string; status: string }>).filter((b) => b.status === 'completed').pop()!;
    expect((await listed()).backups.map((b: { id: string }) => b.id)).toEqual([newestCompleted.id]);
    const left = kube.list('backups', namespace).map((b) => b.metadata.uid);
    expect(left).toEqual([newestCompleted.id]);

    // A new backup completes: the one kept before is past the window now, and goes.
    const made = (await addons('POST', '/db/backups')).json();
    const resource = kube.list('backups', namespace).find((b) => b.metadata.uid === made.id)!;
    kube.setStatus('backups', namespace, resource.metadata.name, {
      phase: 'completed',
      backupId: '20261126T120000',
      stoppedAt: new Date().toISOString(),
    });
    await waitFor('retention after the new backup', async () => {
      const ids = (await listed()).backups.map((b: { id: string }) => b.id);
      return ids.length === 1 && ids[0] === made.id;
    });
    expect(kube.list('backups', namespace).map((b) => b.metadata.uid)).toEqual([made.id]);
  });

  it('a restore that fails while the database is away is logged, never an unhandled rejection (which would end the process)', async () => {
    const unhandled: unknown[] = [];
    const noteUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', noteUnhandled);
    const databaseReachable = (reachable: boolean) => setDatabaseReachable(inject('postgresAdminUrl'), h.databaseUrl, reachable);
    const backups = `/apis/postgresql.cnpg.io/v1/namespaces/${namespace}/backups`;
    let answer = () => {};
    const answered = new Promise<void>((resolve) => (answer = resolve));
    try {
      const backup = (await listed()).backups.at(-1);
      // The restore, in the background, reads the source's Backups from the cluster: held until the database is away.
      kube.hold = (r) => (r.method === 'GET' && r.path === backups ? answered : undefined);
      const from = kube.requests.length;
      const fork = await addons('POST', '/db/restore', { name: 'db-lost', backup_id: backup.id });
      expect(fork.statusCode, fork.body).toBe(202);
      await waitFor('the restore reading the Backups', async () => kube.requests.slice(from).some((r) => r.path === backups), 10_000);
      await databaseReachable(false);
      // Then the cluster refuses it: the restore fails, and its failure cannot be recorded.
      kube.unavailable = true;
      answer();
      const warning = await waitFor(
        'the unrecorded failure logged',
        () =>
          h
            .logs()
            .split('\n')
            .find((line) => line.includes('recording the failed restore failed') && line.includes(fork.json().id)),
        10_000,
        50,
      );
      // Refused, or ended mid-statement when the database went away: either way unreachable.
      expect(JSON.parse(warning).err.message).toMatch(
        /not currently accepting connections|terminating connection due to administrator command/,
      );
      expect(unhandled).toEqual([]);
    } finally {
      kube.unavailable = false;
      kube.hold = () => undefined;
      answer();
      await databaseReachable(true);
      process.off('unhandledRejection', noteUnhandled);
    }
    await waitFor('the API answering again', async () => (await addons('GET', '/db')).statusCode === 200, 10_000);
  });
});
