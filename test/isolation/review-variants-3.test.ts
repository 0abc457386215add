import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, readdirSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestRepo } from '../helpers/git-repo.js';
import { createApp } from '../pipeline-build/fixtures.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { seedApplication, type SeededApplication } from '../helpers/seed.js';
import { basic, decodeJwt } from '../registry/fixtures.js';
import { sandboxMissing } from '../helpers/sandbox.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Issue 34 follow-up, third adversarial review (issues 27/31/32/34): what the previous stop
 * landed without an independent review, tried by a hostile member through the HTTP API.
 */
let h: Harness;
let owner: TestUser;
let mine: SeededApplication;
let sibling: string;
let elsewhere: string;
let baseUrl: string;

const repository = (s: SeededApplication) => `${s.org.slug}/${s.project.slug}/${s.app.slug}`;

async function createKey(body: object): Promise<string> {
  const res = await h.app.inject({ method: 'POST', url: '/v1/auth/api-keys', headers: owner.headers, payload: body });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().key;
}

async function registryToken(password: string, names: string[], extra = '') {
  const scopes = names.map((n) => `scope=${encodeURIComponent(`repository:${n}:pull,push,delete`)}`).join('&');
  const res = await h.app.inject({
    method: 'GET',
    url: `/v1/integrations/docker/auth?service=slipway-registry&${scopes}${extra}`,
    headers: { authorization: basic('u', password) },
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { token: string; refresh_token?: string };
}

const granted = (token: string) =>
  Object.fromEntries((decodeJwt(token).claims.access as Array<{ name: string; actions: string[] }>).map((a) => [a.name, a.actions]));

beforeAll(async () => {
  // The runtime runs add-on servers (sandboxed); nothing here deploys.
  h = await createHarness({ ROUTER_HOST: '127.0.0.1', ROUTER_PORT: 0, SOURCE_MAX_MB: 1 }, { jobs: true, runtime: true });
  baseUrl = await h.app.listen({ host: '127.0.0.1', port: 0 });
  owner = await h.user();
  mine = await seedApplication(h, owner, { org: 'Review Three', project: 'Web', app: 'Api' });
  const second = await h.app.inject({
    method: 'POST',
    url: '/v1/applications',
    headers: owner.headers,
    payload: { name: 'Worker', project_id: mine.project.id },
  });
  expect(second.statusCode, second.body).toBe(201);
  sibling = `${mine.org.slug}/${mine.project.slug}/${second.json().slug}`;
  elsewhere = repository(await seedApplication(h, owner, { org: 'Review Three Other', project: 'Web', app: 'Api' }));
});
afterAll(async () => {
  await h?.close();
});

describe('registry tokens of a scoped API key', () => {
  const scopeOf = () => ({ organization: mine.org.slug, project: mine.project.slug, application: mine.app.slug });

  it('a read-only key of one application pulls that application only: no push, no delete, nothing elsewhere', async () => {
    const key = await createKey({ name: 'read one app', ...scopeOf(), actions: ['read'] });
    const access = granted((await registryToken(key, [repository(mine), sibling, elsewhere])).token);
    expect(access).toEqual({ [repository(mine)]: ['pull'], [sibling]: [], [elsewhere]: [] });
  });

  it("a deploy token pushes and pulls its application's images but deletes none, and reaches no other repository", async () => {
    const key = await createKey({ name: 'ci', kind: 'deploy_token', ...scopeOf(), environment: 'production' });
    const access = granted((await registryToken(key, [repository(mine), sibling, elsewhere])).token);
    expect(access).toEqual({ [repository(mine)]: ['pull', 'push'], [sibling]: [], [elsewhere]: [] });
  });

  it('a refresh token keeps the limits of the key it was issued to', async () => {
    const key = await createKey({ name: 'offline', ...scopeOf(), actions: ['read'] });
    const refresh = (await registryToken(key, [], '&offline_token=true')).refresh_token!;
    expect(refresh).toEqual(expect.any(String));
    const access = granted((await registryToken(refresh, [repository(mine), sibling, elsewhere])).token);
    expect(access).toEqual({ [repository(mine)]: ['pull'], [sibling]: [], [elsewhere]: [] });
  });

  it('a key without limits still gets every member action', async () => {
    const access = granted((await registryToken(owner.apiKey, [repository(mine), elsewhere])).token);
    expect(access).toEqual({ [repository(mine)]: ['pull', 'push', 'delete'], [elsewhere]: ['pull', 'push', 'delete'] });
  });
});

const missing = sandboxMissing();
describe.skipIf(missing)("`slipway addons psql`: the answer is bounded, the server's output past it never read", () => {
  const query = (sql: string) =>
    h.app.inject({ method: 'POST', url: `/v1/organizations/${mine.org.slug}/addons/db/query`, headers: owner.headers, payload: { sql } });

  beforeAll(async () => {
    const created = await h.app.inject({
      method: 'POST',
      url: `/v1/organizations/${mine.org.slug}/addons`,
      headers: owner.headers,
      payload: { name: 'db', kind: 'postgres' },
    });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json().status).toBe('running');
  }, 120_000);

  it('64 MiB of values answer the first 4 MiB, marked truncated (the platform never held the rest)', async () => {
    const res = await query(`SELECT repeat('x', 1024 * 1024) FROM generate_series(1, 64)`);
    expect(res.statusCode).toBe(200);
    expect(res.body.length).toBeLessThan(5 * 1024 * 1024);
    expect(res.json()).toMatchObject({ columns: ['repeat'], row_count: null, truncated: true });
    expect(res.json().rows).toHaveLength(4);
  });

  it('a billion rows answer 1000, and the statement stops on the server', async () => {
    const res = await query('SELECT generate_series(1, 1000000000)');
    expect(res.statusCode, res.body.slice(0, 300)).toBe(200);
    expect(res.json()).toMatchObject({ row_count: null, truncated: true });
    expect(res.json().rows).toHaveLength(1000);
    expect(res.json().rows[999]).toEqual(['1000']);
    const running = `SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%generate_series(1, 10000%' AND pid <> pg_backend_pid()`;
    await waitFor('the cut statement to end on the server', async () => (await query(running)).json().rows[0][0] === '0', 20_000, 200);
  });

  it('the last statement of several is answered; a small answer is whole', async () => {
    const res = await query('SELECT 1; SELECT g, g * 2 AS twice FROM generate_series(1, 3) g');
    expect(res.json()).toEqual({
      command: 'SELECT',
      row_count: 3,
      columns: ['g', 'twice'],
      rows: [
        ['1', '2'],
        ['2', '4'],
        ['3', '6'],
      ],
      truncated: false,
    });
    expect((await query('CREATE TABLE t (v int)')).json()).toMatchObject({ command: 'CREATE', rows: [], truncated: false });
    expect((await query('SELEC nonsense')).statusCode).toBe(422);
  });
});

describe('`git push` of branches no environment deploys', () => {
  let repo: TestRepo;
  let askpass: string;

  /** `git push` as a child process, the API key given by GIT_ASKPASS. */
  const push = (key: string, ...args: string[]) =>
    new Promise<{ code: number; output: string }>((resolve) => {
      execFile(
        'git',
        ['-c', 'credential.helper=', 'push', ...args],
        {
          cwd: repo.dir,
          env: { PATH: process.env.PATH, HOME: askpass, GIT_ASKPASS: join(askpass, 'askpass'), KEY: key, GIT_TERMINAL_PROMPT: '0' },
          timeout: 60_000,
        },
        (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, output: `${stdout}${stderr}` }),
      );
    });

  beforeAll(() => {
    askpass = mkdtempSync(join(tmpdir(), 'slipway-review3-askpass-'));
    writeFileSync(join(askpass, 'askpass'), '#!/bin/sh\ncase "$1" in Username*) echo git ;; *) echo "$KEY" ;; esac\n');
    chmodSync(join(askpass, 'askpass'), 0o755);
    repo = new TestRepo('slipway-review3-push-');
  });
  afterAll(() => {
    repo?.remove();
    if (askpass) rmSync(askpass, { recursive: true, force: true });
  });

  it("count in the organization's disk quota, and deleting the application removes what they stored", async () => {
    const admin = await h.user({ admin: true });
    const t = await createApp(h, { auto_deploy_branch: 'main' });
    const quota = async (mb: number) => {
      const limits = await h.app.inject({
        method: 'PUT',
        url: `/v1/organizations/${t.orgSlug}/pipeline-limits`,
        headers: admin.headers,
        payload: { disk_quota_mb: mb },
      });
      expect(limits.statusCode, limits.body).toBe(200);
    };
    await quota(1);
    repo.git('remote', 'add', 'slipway', `${baseUrl}/git/${t.appId}.git`);

    // 3 MiB of hex (1.5 MiB once compressed): more than the 1 MiB of room. Refused in git's protocol (git shows why)
    // with no more than the room spooled, and nothing stored.
    repo.commit({ 'blob.hex': randomBytes(1536 * 1024).toString('hex') }, 'big');
    const tooBig = await push(t.user.apiKey, 'slipway', 'HEAD:refs/heads/stash');
    expect(tooBig.code, tooBig.output).not.toBe(0);
    expect(tooBig.output).toMatch(
      /remote rejected\] HEAD -> stash \(The push is larger than the room left in the organization's disk quota \(\d+ bytes\)\)/,
    );
    // The spool is removed once the answer is sent: git may have exited a moment before.
    await waitFor('the spooled push removed', () => readdirSync(join(h.dataDir, 'git', '.incoming')).length === 0, 5_000, 50);

    // With room, on a branch no environment deploys: stored only.
    await quota(2);
    const first = await push(t.user.apiKey, 'slipway', 'HEAD:refs/heads/stash');
    expect(first.code, first.output).toBe(0);
    expect(first.output).toContain('stash deploys to no environment: stored only');

    // Over the quota now: nothing more is stored, whichever branch.
    await quota(1);
    repo.commit({ 'blob.hex': randomBytes(1536 * 1024).toString('hex') }, 'bigger');
    const second = await push(t.user.apiKey, 'slipway', 'HEAD:refs/heads/stash-2');
    expect(second.code, second.output).not.toBe(0);
    expect(second.output).toContain('Disk quota exceeded');
    const usage = await h.app.inject({ method: 'GET', url: `/v1/organizations/${t.orgSlug}/usage`, headers: t.user.headers });
    expect(usage.json().total_bytes, 'the first push counts').toBeGreaterThan(1024 * 1024);

    const pushed = join(h.dataDir, 'git', `${t.appId}.git`);
    expect(existsSync(pushed)).toBe(true);
    const deleted = await h.app.inject({ method: 'DELETE', url: `/v1/applications/${t.appId}`, headers: t.user.headers });
    expect(deleted.statusCode, deleted.body).toBe(204);
    expect(existsSync(pushed)).toBe(false);
  });

  it('a small push holding a huge file fails its build before the file is written out (SOURCE_MAX_MB)', async () => {
    const t = await createApp(h, { auto_deploy_branch: 'main' });
    repo.git('remote', 'add', 'bomb', `${baseUrl}/git/${t.appId}.git`);
    // 64 MiB of one letter: git sends a few kilobytes.
    repo.commit({ 'blob.hex': null, 'zeros.txt': 'x'.repeat(64 * 1024 * 1024), Procfile: 'web: sleep 1000\n' }, 'bomb');
    const pushed = await push(t.user.apiKey, 'bomb', 'HEAD:refs/heads/main');
    expect(pushed.code, pushed.output).not.toBe(0);
    expect(pushed.output).toContain('more than this server builds (1048576 bytes, SOURCE_MAX_MB)');
  });
});
