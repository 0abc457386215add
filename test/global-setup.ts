import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { createDb } from '../src/platform/db/database.js';
import { startEmbeddedPostgres } from '../src/platform/db/embedded.js';
import { migrateToLatest } from '../src/platform/db/migrate.js';

export const TEMPLATE_DB = 'slipway_test_template';

declare module 'vitest' {
  export interface ProvidedContext {
    postgresAdminUrl: string;
  }
}

/**
 * One PostgreSQL for the whole run: DATABASE_URL when set, else the embedded server in a
 * temporary directory. A template database is migrated once; each test file clones it.
 */
export default async function setup(project: TestProject) {
  let adminUrl = process.env.DATABASE_URL;
  let stop = async () => {};
  if (!adminUrl) {
    const dir = mkdtempSync(join(tmpdir(), 'slipway-test-pg-'));
    const port = 55000 + Math.floor(Math.random() * 5000);
    const embedded = await startEmbeddedPostgres(dir, port);
    adminUrl = embedded.url;
    stop = async () => {
      await embedded.stop();
      rmSync(dir, { recursive: true, force: true });
    };
  }
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`drop database if exists ${TEMPLATE_DB} with (force)`);
  await admin.query(`create database ${TEMPLATE_DB}`);
  await admin.end();
  const templateUrl = new URL(adminUrl);
  templateUrl.pathname = `/${TEMPLATE_DB}`;
  const db = createDb(templateUrl.toString(), 1);
  await migrateToLatest(db);
  await db.destroy();
  project.provide('postgresAdminUrl', adminUrl);
  return stop;
}
