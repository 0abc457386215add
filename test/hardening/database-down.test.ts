/**
 * Issue 20, "500 while PostgreSQL is down": with the database stopped, data requests answer
 * 503 `{status,message}` with Retry-After; once it is back they answer again without a
 * restart. The test runs its own embedded PostgreSQL so it can stop and start it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createIdentity } from '../../src/services.js';
import { generateKeyText, parseKey, SecretBox } from '../../src/platform/crypto/secret-box.js';
import { createDb, type Db } from '../../src/platform/db/database.js';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../src/platform/db/embedded.js';
import { migrateToLatest } from '../../src/platform/db/migrate.js';
import type { App } from '../../src/platform/http/types.js';

let dir: string;
let port: number;
let pgServer: EmbeddedDatabase | null = null;
let db: Db;
let app: App;
let headers: Record<string, string>;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'slipway-pg-down-'));
  port = 40000 + Math.floor(Math.random() * 10000);
  pgServer = await startEmbeddedPostgres(dir, port);
  db = createDb(pgServer.url, 4);
  await migrateToLatest(db);
  const config = loadConfig({}, { DATA_DIR: join(dir, 'data'), DATABASE_URL: pgServer.url, LOG_LEVEL: 'fatal' });
  const ctx = { config, db, secrets: new SecretBox({ current: parseKey(generateKeyText()), previous: [] }) };
  app = await buildApp(ctx, { logger: false });
  await app.ready();
  const { users, auth } = createIdentity(ctx);
  const user = await users.create({
    username: 'dana',
    email: 'dana@example.com',
    password: 'dana-password-1',
    is_admin: false,
  });
  const { key } = await auth.createApiKey(user.id, 'test');
  headers = { 'x-api-key': key };
});

afterAll(async () => {
  await app?.close();
  await db?.destroy();
  await pgServer?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const get = (url: string) => app.inject({ method: 'GET', url, headers });

describe('PostgreSQL stopped and started again', () => {
  it('answers 503 with Retry-After while the database is down, and recovers without a restart', async () => {
    const created = await app.inject({ method: 'POST', url: '/v1/organizations', headers, payload: { name: 'Up' } });
    expect(created.statusCode, created.body).toBe(201);
    expect((await get('/v1/organizations')).statusCode).toBe(200);

    await pgServer!.stop();
    pgServer = null;
    for (const res of [
      await get('/v1/organizations'),
      await get('/v1/projects'),
      await app.inject({ method: 'POST', url: '/v1/organizations', headers, payload: { name: 'Down' } }),
      await app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: 'dana@example.com', password: 'dana-password-1' } }),
    ]) {
      expect(res.statusCode, res.body).toBe(503);
      expect(res.json()).toEqual({ status: 503, message: expect.stringMatching(/database/i) });
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    }

    pgServer = await startEmbeddedPostgres(dir, port);
    const back = await get('/v1/organizations');
    expect(back.statusCode, back.body).toBe(200);
    expect(back.json().map((o: { name: string }) => o.name)).toEqual(['Up']);
  });
});
