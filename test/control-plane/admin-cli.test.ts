/**
 * The administrator's tool (`npm run admin`), spawned as a user runs it (`tsx src/admin/main.ts`), against a test
 * database given in DATABASE_URL; and secret key rotation end to end.
 */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigurationsRepository, ConfigurationsService } from '../../src/modules/configurations/index.js';
import { generateKeyText, keyId, parseKey, SecretBox } from '../../src/platform/crypto/secret-box.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { call, seedWorld } from './fixtures.js';
import { insertRow } from './route-fixtures.js';
import { v7 as uuidv7 } from 'uuid';

const ROOT = resolve(import.meta.dirname, '../..');
const TSX = resolve(ROOT, 'node_modules/.bin/tsx');

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => {
  await h?.close();
});

function cli(args: string[], env: Record<string, string> = {}, input?: string) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
    const child = execFile(
      TSX,
      ['src/admin/main.ts', ...args],
      {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', DATABASE_URL: h.databaseUrl, DATA_DIR: h.dataDir, ...env },
        timeout: 60_000,
      },
      (err, stdout, stderr) => done({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
    child.stdin?.end(input ?? '');
  });
}

describe('admin tool', () => {
  it('users create / users list', async () => {
    const created = await cli([
      'users',
      'create',
      '--username',
      'root',
      '--email',
      'Root@Example.com',
      '--password',
      'a-long-password',
      '--admin',
    ]);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toMatch(/created user root <root@example\.com> \(site admin\)/);
    expect(created.stdout + created.stderr).not.toContain('a-long-password');
    const row = await h.ctx.db.selectFrom('users').selectAll().where('username', '=', 'root').executeTakeFirstOrThrow();
    expect(row.is_admin).toBe(true);
    expect(row.password_hash).toMatch(/^scrypt\$/);

    const list = await cli(['users', 'list']);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(new RegExp(`${row.id}\\troot\\troot@example.com\\tadmin`));

    // The new administrator can log in over the API.
    const login = await h.app.inject({
      method: 'POST',
      url: '/v1/auth/login',
      payload: { email: 'root@example.com', password: 'a-long-password' },
    });
    expect(login.statusCode).toBe(200);
    expect(login.json().user.is_admin).toBe(true);

    const dup = await cli(['users', 'create', '--username', 'ROOT', '--email', 'x@example.com', '--password', 'a-long-password']);
    expect(dup.code).toBe(1);
    expect(dup.stderr).toMatch(/already exists/);
    const short = await cli(['users', 'create', '--username', 'shorty', '--email', 'shorty@example.com', '--password', 'short']);
    expect(short.code).toBe(1);
    expect(short.stderr).toMatch(/password/);
  });

  it('users create --password-stdin takes the password from standard input', async () => {
    const created = await cli(
      ['users', 'create', '--username', 'piped', '--email', 'piped@example.com', '--password-stdin'],
      {},
      'a piped password\n',
    );
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout + created.stderr).not.toContain('a piped password');
    const login = await h.app.inject({
      method: 'POST',
      url: '/v1/auth/login',
      payload: { email: 'piped@example.com', password: 'a piped password' },
    });
    expect(login.statusCode).toBe(200);
    // Neither way of giving the password: a usage error, before the database is opened.
    const neither = await cli(['users', 'create', '--username', 'nopass', '--email', 'nopass@example.com']);
    expect(neither.code).toBe(2);
    expect(neither.stderr).toMatch(/--password is required/);
  });

  it('api-keys create prints a working key once', async () => {
    const user = await h.user();
    const res = await cli(['api-keys', 'create', '--user', user.email, '--name', 'deploy-bot', '--expires-in-days', '30']);
    expect(res.code, res.stderr).toBe(0);
    const key = res.stdout.trim();
    expect(key).toMatch(/^slw_[A-Za-z0-9_-]+$/);
    expect(res.stderr).toMatch(/shown only this once/);
    const session = await call(h, 'GET', '/v1/auth/session', null, undefined, { 'x-api-key': key });
    expect(session.body).toMatchObject({ authenticated: true, user: { id: user.id } });
    const keys = await call(h, 'GET', '/v1/auth/api-keys', user);
    expect(keys.body.find((k: any) => k.name === 'deploy-bot')).toMatchObject({ expires: expect.any(String) });
    const unknown = await cli(['api-keys', 'create', '--user', 'nobody', '--name', 'x']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/No user/);
  });

  it('usage errors exit 2 with the usage text', async () => {
    const res = await cli(['users', 'create', '--username', 'x']);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/--email is required/);
    const unknown = await cli(['frobnicate']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/Usage: npm run admin/);
    expect((await cli(['users', 'list', '--bogus'])).code).toBe(2);
  });
});

describe('secret key rotation', () => {
  it('old values read after rotation; `secrets rotate` re-seals them under the new key', async () => {
    const oldKey = generateKeyText();
    const newKey = generateKeyText();
    const w = await seedWorld(h);
    const before = new ConfigurationsService(
      h.ctx.db,
      new ConfigurationsRepository(h.ctx.db),
      new SecretBox({ current: parseKey(oldKey), previous: [] }),
    );
    const scope = { scope: 'application' as const, scopeId: w.app.id };
    const created = await before.create(scope, { name: 'ROTATE_ME', value: 'value-under-old-key', secret: true });
    // A release's frozen configuration is sealed too.
    const sealedConfig = new SecretBox({ current: parseKey(oldKey), previous: [] }).seal(
      JSON.stringify({ ROTATE_ME: 'value-under-old-key' }),
    );
    const image = await insertRow(h, 'images', { id: uuidv7(), application_id: w.app.id, version: 1, repository_name: 'r' });
    const env = await h.ctx.db.selectFrom('environments').select('id').where('project_id', '=', w.project.id).executeTakeFirstOrThrow();
    const release = await insertRow(h, 'releases', {
      id: uuidv7(),
      application_id: w.app.id,
      environment_id: env.id,
      version: 1,
      image_ref: image,
      configuration_sealed: sealedConfig,
    });

    // Only values sealed under the old key take part (the harness sealed the world's own secret with its key).
    await h.ctx.db.deleteFrom('config_vars').where('secret', '=', true).where('id', '<>', created.id).execute();

    // After rotation (new key current, old key previous) the old value still reads.
    const rotated = new SecretBox({ current: parseKey(newKey), previous: [parseKey(oldKey)] });
    const during = new ConfigurationsService(h.ctx.db, new ConfigurationsRepository(h.ctx.db), rotated);
    expect((await during.resolve([scope])).find((v) => v.name === 'ROTATE_ME')?.value).toBe('value-under-old-key');

    // Without the old key the CLI refuses rather than losing data.
    const missing = await cli(['secrets', 'rotate'], { SECRET_KEY: newKey });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/SECRET_KEY_PREVIOUS/);

    const res = await cli(['secrets', 'rotate'], { SECRET_KEY: newKey, SECRET_KEY_PREVIOUS: oldKey });
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/config_vars\.value_sealed: re-sealed 1 of 1/);
    expect(res.stdout).toMatch(/releases\.configuration_sealed: re-sealed 1 of 1/);
    expect(res.stdout + res.stderr).not.toContain('value-under-old-key');

    // Now the new key alone reads everything.
    const onlyNew = new SecretBox({ current: parseKey(newKey), previous: [] });
    const after = new ConfigurationsService(h.ctx.db, new ConfigurationsRepository(h.ctx.db), onlyNew);
    expect((await after.resolve([scope])).find((v) => v.name === 'ROTATE_ME')?.value).toBe('value-under-old-key');
    const row = await h.ctx.db.selectFrom('config_vars').select('value_sealed').where('id', '=', created.id).executeTakeFirstOrThrow();
    expect(row.value_sealed!.split(':')[1]).toBe(keyId(parseKey(newKey)));
    const rel = await h.ctx.db.selectFrom('releases').select('configuration_sealed').where('id', '=', release).executeTakeFirstOrThrow();
    expect(JSON.parse(onlyNew.open(rel.configuration_sealed!))).toEqual({ ROTATE_ME: 'value-under-old-key' });

    // A second run has nothing left to do.
    const again = await cli(['secrets', 'rotate'], { SECRET_KEY: newKey });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/config_vars\.value_sealed: re-sealed 0 of/);
  });
});
