import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { createDb } from '../src/platform/db/database.js';
import { embeddedSuperuserUrl, startEmbeddedPostgres } from '../src/platform/db/embedded.js';
import { migrateToLatest } from '../src/platform/db/migrate.js';
import { bundleCli } from './cli-bundle.js';
import { buildServer } from './server-build.js';

export const TEMPLATE_DB = 'slipway_test_template';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A superuser: creates and drops the test files' databases, nothing else. */
    postgresAdminUrl: string;
    /** The role that owns every test database and that tests connect as: no superuser, as the platform's in production. */
    postgresOwnerUrl: string;
    /** The `slipway` CLI bundled from src/ for this run (test/cli-bundle.ts), run with node. */
    slipwayCli: string;
    /** The server compiled from src/ for this run (test/server-build.ts): the directory holding main.js. */
    slipwayServer: string;
  }
}

async function adminQuery(adminUrl: string, statement: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(statement);
  } finally {
    await admin.end();
  }
}

/**
 * With DATABASE_URL (a superuser of someone's server): a login role for this run, with no
 * power beyond owning the test databases, as the embedded server's platform role has.
 */
async function createOwnerRole(adminUrl: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const role = `slipway_test_${randomBytes(4).toString('hex')}`;
  const password = randomBytes(18).toString('base64url');
  await adminQuery(adminUrl, `create role ${role} login password '${password}' nosuperuser nocreatedb nocreaterole`);
  const url = new URL(adminUrl);
  url.username = role;
  url.password = password;
  return { url: url.toString(), drop: () => adminQuery(adminUrl, `drop role if exists ${role}`) };
}

/**
 * One PostgreSQL for the whole run: DATABASE_URL when set, else the embedded server in a
 * temporary directory, started as production starts it. A template database is migrated once
 * by the owner role; each test file clones it (owned by that role).
 */
export default async function setup(project: TestProject) {
  let adminUrl = process.env.DATABASE_URL;
  let ownerUrl: string;
  let stop = async () => {};
  if (!adminUrl) {
    const dir = mkdtempSync(join(tmpdir(), 'slipway-test-pg-'));
    const port = 55000 + Math.floor(Math.random() * 5000);
    const embedded = await startEmbeddedPostgres(dir, port);
    adminUrl = embeddedSuperuserUrl(dir, port);
    ownerUrl = embedded.url;
    stop = async () => {
      await embedded.stop();
      rmSync(dir, { recursive: true, force: true });
    };
  } else {
    const admin = adminUrl;
    const owner = await createOwnerRole(admin);
    ownerUrl = owner.url;
    stop = async () => {
      await adminQuery(admin, `drop database if exists ${TEMPLATE_DB} with (force)`);
      await owner.drop();
    };
  }
  const owner = decodeURIComponent(new URL(ownerUrl).username);
  await adminQuery(adminUrl, `drop database if exists ${TEMPLATE_DB} with (force)`);
  await adminQuery(adminUrl, `create database ${TEMPLATE_DB} owner ${pg.escapeIdentifier(owner)}`);
  const templateUrl = new URL(ownerUrl);
  templateUrl.pathname = `/${TEMPLATE_DB}`;
  const db = createDb(templateUrl.toString(), 1);
  await migrateToLatest(db);
  await db.destroy();
  project.provide('postgresAdminUrl', adminUrl);
  project.provide('postgresOwnerUrl', ownerUrl);
  const [cli, server] = await Promise.all([bundleCli(), buildServer()]);
  project.provide('slipwayCli', cli.program);
  project.provide('slipwayServer', server.dir);
  return async () => {
    cli.remove();
    server.remove();
    await stop();
  };
}
