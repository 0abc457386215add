/**
 * Issue 27, class 2 (platform services): the embedded PostgreSQL as production starts it
 * (`src/main.ts` on a fresh DATA_DIR) listens on no TCP port, only on a unix socket in a 0700
 * directory, and the credentials the platform itself uses open nothing beyond its own
 * database: no program, no server file, no role, no database, no other database. A data
 * directory of an earlier version (everything owned by the superuser) is handed over at
 * start. A DATABASE_URL of a superuser, and a Caddy admin API on TCP, are refused at start.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDb } from '../../src/platform/db/database.js';
import { embeddedSocketDir, embeddedSuperuserUrl, PLATFORM_ROLE, startEmbeddedPostgres } from '../../src/platform/db/embedded.js';
import { migrateToLatest } from '../../src/platform/db/migrate.js';
import { PipelineJobs } from '../../src/platform/jobs/pipeline-jobs.js';
import { createScratchDatabase, type ScratchDatabase } from '../helpers/scratch-database.js';
import { killLeftovers, runMain as runMainProcess } from '../helpers/main-process.js';

const ADMIN = { email: 'admin@example.com', password: 'first-admin-password' };
const cleanups: Array<() => Promise<unknown> | unknown> = [];

afterAll(async () => {
  killLeftovers();
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** The real server process, as an operator starts it (its router on a free port). */
function runMain(env: Record<string, string>) {
  return runMainProcess({ ROUTER_PORT: '0', ...env });
}

/** The error PostgreSQL (or the socket) answers `statement` with, run as the connection of `url`. */
async function refusal(url: string, statement: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {}); // a refused connection is the answer, not a crash
  try {
    await client.connect();
    await client.query(statement);
    return 'no error';
  } catch (err) {
    return (err as Error).message;
  } finally {
    await client.end().catch(() => {}); // already closed when the connection was refused
  }
}

/** Whether anything accepts a TCP connection on 127.0.0.1:`port`. */
function tcpAnswers(port: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      done(true);
    });
    socket.once('error', () => done(false));
  });
}

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

describe('the embedded PostgreSQL as production starts it', () => {
  let dataDir: string;
  let port: number;
  let server: ReturnType<typeof runMain>;
  let apiUrl: string;
  /** The platform's own connection string: what `startEmbeddedPostgres` hands the server. */
  let platformUrl: string;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'slipway-db-role-'));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    port = 40000 + Math.floor(Math.random() * 10000);
    server = runMain({ DATA_DIR: dataDir, EMBEDDED_PG_PORT: String(port), ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password });
    cleanups.push(() => server.stop());
    const url = await server.ready;
    if (!url) throw new Error(`the server did not start:\n${server.output()}`);
    apiUrl = url;
    // The same start function the server ran: on a live data directory it shares the server's
    // database and answers with the very URL the platform connects with.
    platformUrl = (await startEmbeddedPostgres(dataDir, port)).url;
  }, 120_000);

  it('serves the platform end to end: an organization created through the HTTP API lands in its database', async () => {
    const login = await fetch(`${apiUrl}/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(ADMIN),
    });
    expect(login.status).toBe(200);
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    const created = await fetch(`${apiUrl}/v1/organizations`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Walled' }),
    });
    expect(created.status, await created.clone().text()).toBe(201);
    const client = new pg.Client({ connectionString: platformUrl });
    await client.connect();
    try {
      const { rows } = await client.query(
        `select current_user as role, (select count(*) from organizations where name = 'Walled')::int as n`,
      );
      expect(rows).toEqual([{ role: PLATFORM_ROLE, n: 1 }]);
    } finally {
      await client.end();
    }
  });

  it('listens on no TCP port; its socket is in a directory only its own user (and root) can open', async () => {
    expect(await tcpAnswers(port)).toBe(false);
    expect(new URL(platformUrl).hostname).toBe(encodeURIComponent(embeddedSocketDir(dataDir)));
    const socketDir = statSync(embeddedSocketDir(dataDir));
    expect(socketDir.mode & 0o777).toBe(0o700);
    expect(socketDir.uid).toBe(statSync(join(dataDir, 'postgres')).uid); // the server's own user
    expect(statSync(join(dataDir, 'postgres.password')).mode & 0o777).toBe(0o600);
    expect(statSync(join(dataDir, `postgres.${PLATFORM_ROLE}.password`)).mode & 0o777).toBe(0o600);
  });

  it("with the platform's own credentials: no program, no server file, no large-object import, no role, no database", async () => {
    expect(await refusal(platformUrl, `create temporary table loot (line text); copy loot from program 'id'`)).toMatch(
      /permission denied to COPY to or from an external program/,
    );
    expect(await refusal(platformUrl, `select pg_read_file('/etc/passwd')`)).toMatch(/permission denied for function pg_read_file/);
    expect(await refusal(platformUrl, `create temporary table loot (line text); copy loot from '/etc/passwd'`)).toMatch(
      /permission denied to COPY from a file/,
    );
    expect(await refusal(platformUrl, `copy (select 'x') to '/tmp/slipway-db-role-written'`)).toMatch(
      /permission denied to COPY to a file/,
    );
    expect(await refusal(platformUrl, `select lo_import('/etc/passwd')`)).toMatch(/permission denied for function lo_import/);
    expect(await refusal(platformUrl, `select pg_ls_dir('/')`)).toMatch(/permission denied for function pg_ls_dir/);
    expect(await refusal(platformUrl, `create role thief login superuser`)).toMatch(/permission denied to create role/);
    expect(await refusal(platformUrl, `create database loot`)).toMatch(/permission denied to create database/);
    expect(await refusal(platformUrl, `alter role ${PLATFORM_ROLE} superuser`)).toMatch(/permission denied/);
    expect(await refusal(platformUrl, `grant pg_execute_server_program to ${PLATFORM_ROLE}`)).toMatch(/permission denied/);
    expect(await refusal(platformUrl, `create extension file_fdw`)).toMatch(/permission denied to create extension "file_fdw"/);
    expect(await refusal(platformUrl, `alter system set listen_addresses = '*'`)).toMatch(/permission denied/);
    const client = new pg.Client({ connectionString: platformUrl });
    await client.connect();
    try {
      const { rows } = await client.query(
        `select rolsuper, rolcreaterole, rolcreatedb, rolreplication, rolbypassrls,
                (select count(*)::int from pg_auth_members where member = r.oid) as memberships
           from pg_roles r where rolname = current_user`,
      );
      expect(rows).toEqual([
        { rolsuper: false, rolcreaterole: false, rolcreatedb: false, rolreplication: false, rolbypassrls: false, memberships: 0 },
      ]);
    } finally {
      await client.end();
    }
  });

  it("the platform's credentials open no other database, and no other role gets in with them", async () => {
    expect(await refusal(withDatabase(platformUrl, 'postgres'), 'select 1')).toMatch(/permission denied for database "postgres"/);
    expect(await refusal(withDatabase(platformUrl, 'template1'), 'select 1')).toMatch(/permission denied for database "template1"/);
    const asSuperuser = new URL(platformUrl);
    asSuperuser.username = 'postgres';
    expect(await refusal(asSuperuser.toString(), 'select 1')).toMatch(/password authentication failed for user "postgres"/);
    // Over TCP, nobody at all: nothing listens.
    const overTcp = new URL(platformUrl);
    overTcp.hostname = '127.0.0.1';
    expect(await refusal(overTcp.toString(), 'select 1')).toMatch(/ECONNREFUSED/);
  });

  it('starts again on the same data directory (socket, role and ownership set up again), keeping the data', async () => {
    expect(await server.stop()).toBe(0);
    server = runMain({ DATA_DIR: dataDir, EMBEDDED_PG_PORT: String(port) });
    cleanups.push(() => server.stop());
    expect(await server.ready, server.output()).toMatch(/^http:/);
    const platform = (await startEmbeddedPostgres(dataDir, port)).url;
    expect(platform).toBe(platformUrl);
    const client = new pg.Client({ connectionString: platform });
    await client.connect();
    try {
      expect((await client.query(`select name from organizations`)).rows).toEqual([{ name: 'Walled' }]);
    } finally {
      await client.end();
    }
  }, 120_000);
});

describe('a data directory of an earlier version (the superuser owned everything, TCP open)', () => {
  it('is handed over at start: every object owned by the platform role, migrations and the job store run as it', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'slipway-db-upgrade-'));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const port = 40000 + Math.floor(Math.random() * 10000);
    let embedded = await startEmbeddedPostgres(dataDir, port);
    cleanups.push(() => embedded.stop());
    // What an earlier version left: the database and all in it the superuser's, no platform role.
    const superuser = embeddedSuperuserUrl(dataDir, port);
    const admin = new pg.Client({ connectionString: superuser });
    await admin.connect();
    await admin.query(`alter database slipway owner to postgres`);
    await admin.query(`drop role ${PLATFORM_ROLE}`);
    await admin.query(`grant connect on database postgres to public`);
    await admin.end();
    const old = createDb(embeddedSuperuserUrl(dataDir, port, 'slipway'), 2);
    await migrateToLatest(old);
    const oldJobs = new PipelineJobs({ db: old });
    await oldJobs.start();
    await oldJobs.stop();
    await old.destroy();
    await embedded.stop();

    embedded = await startEmbeddedPostgres(dataDir, port);
    const client = new pg.Client({ connectionString: embedded.url });
    await client.connect();
    try {
      const notOwned = await client.query(`
        select kind, name from (
          select 'relation' as kind, n.nspname || '.' || c.relname as name, c.relowner as owner, n.nspname as schema
            from pg_class c join pg_namespace n on n.oid = c.relnamespace
          union all select 'schema', n.nspname, n.nspowner, n.nspname from pg_namespace n where n.nspname <> 'public'
          union all select 'function', p.oid::regprocedure::text, p.proowner, n.nspname
            from pg_proc p join pg_namespace n on n.oid = p.pronamespace
          union all select 'type', t.oid::regtype::text, t.typowner, n.nspname
            from pg_type t join pg_namespace n on n.oid = t.typnamespace where t.typtype in ('e', 'd', 'r')
        ) o
        where schema !~ '^pg_' and schema <> 'information_schema'
          and owner <> (select oid from pg_roles where rolname = current_user)`);
      expect(notOwned.rows).toEqual([]);
      const tables = await client.query(`select count(*)::int as n from pg_tables where schemaname in ('public', 'pgboss')`);
      expect(tables.rows[0].n).toBeGreaterThan(20);
      expect((await client.query(`select pg_get_userbyid(datdba) as owner from pg_database where datname = 'slipway'`)).rows).toEqual([
        { owner: PLATFORM_ROLE },
      ]);
    } finally {
      await client.end();
    }
    expect(await refusal(withDatabase(embedded.url, 'postgres'), 'select 1')).toMatch(/permission denied for database "postgres"/);
    const db = createDb(embedded.url, 2);
    try {
      expect(await migrateToLatest(db)).toEqual([]);
      const jobs = new PipelineJobs({ db });
      await jobs.start();
      await jobs.stop();
      const client2 = new pg.Client({ connectionString: embedded.url });
      await client2.connect();
      await client2.query(
        `insert into users (id, username, email, password_hash) values (gen_random_uuid(), 'later', 'later@example.com', 'x')`,
      );
      await client2.end();
    } finally {
      await db.destroy();
    }
  }, 120_000);
});

describe('services the platform would reach with too much power are refused at start', () => {
  let scratch: ScratchDatabase;
  beforeAll(async () => {
    // A database reached as the test server's superuser (an operator's DATABASE_URL of `postgres`).
    scratch = await createScratchDatabase(inject('postgresAdminUrl'), `t_superuser_${randomBytes(5).toString('hex')}`);
    cleanups.push(() => scratch.drop());
  });

  it('a DATABASE_URL of a superuser stops the start naming the risk and the fix; DATABASE_ALLOW_SUPERUSER=true starts with a warning', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'slipway-db-superuser-'));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const refused = runMain({ DATABASE_URL: scratch.url, DATA_DIR: dataDir });
    expect(await refused.exited).toBe(1);
    const role = decodeURIComponent(new URL(scratch.url).username);
    expect(refused.output()).toContain(
      `Slipway could not start: DATABASE_URL connects as role "${role}", which is a superuser (COPY … FROM PROGRAM runs commands on the database host`,
    );
    expect(refused.output()).toContain('set DATABASE_ALLOW_SUPERUSER=true to accept the risk');
    expect(refused.output()).not.toContain(new URL(scratch.url).password);
    const migrated = await new pg.Client({ connectionString: scratch.url });
    await migrated.connect();
    // Refused before anything was written: no migration ran.
    expect((await migrated.query(`select count(*)::int as n from pg_tables where schemaname = 'public'`)).rows).toEqual([{ n: 0 }]);
    await migrated.end();

    const allowed = runMain({ DATABASE_URL: scratch.url, DATA_DIR: dataDir, DATABASE_ALLOW_SUPERUSER: 'true' });
    cleanups.push(() => allowed.stop());
    expect(await allowed.ready, allowed.output()).toMatch(/^http:/);
    expect(allowed.output()).toContain(`warning: DATABASE_URL connects as role "${role}", which is a superuser`);
    expect(await allowed.stop()).toBe(0);
  }, 120_000);

  it('EDGE_DRIVER=caddy with CADDY_ADMIN_URL on TCP stops the start saying why', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'slipway-caddy-tcp-'));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const database = await createScratchDatabase(inject('postgresAdminUrl'), `t_caddy_${randomBytes(5).toString('hex')}`, {
      template: 'slipway_test_template',
      ownerUrl: inject('postgresOwnerUrl'),
    });
    cleanups.push(() => database.drop());
    const refused = runMain({
      DATABASE_URL: database.url,
      DATA_DIR: dataDir,
      EDGE_DRIVER: 'caddy',
      CADDY_ADMIN_URL: 'http://127.0.0.1:2019',
    });
    expect(await refused.exited).toBe(1);
    expect(refused.output()).toContain(
      'Slipway could not start: CADDY_ADMIN_URL http://127.0.0.1:2019 is a TCP address: every process on the host that can reach it',
    );
    expect(refused.output()).toContain('set CADDY_ADMIN_ALLOW_TCP=true to accept the risk');
  }, 60_000);
});
