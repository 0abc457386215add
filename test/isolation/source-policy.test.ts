import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type AddressInfo } from 'node:net';
import { fetchSource } from '../../src/platform/git/source.js';
import { checkMemberSource, REFUSED_ADDRESS, REFUSED_LOCAL, type FetchPins } from '../../src/platform/git/source-policy.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { TestRepo } from '../helpers/git-repo.js';
import { buildAndWait, createApp, type TestApp } from '../pipeline-build/fixtures.js';

/**
 * Issue 10's source policy through the API: a member builds only from owner/repo on
 * GITHUB_URL and from git URLs of public hosts; local paths, file:// and private or
 * loopback addresses are refused on save (one generic message) and again at build time;
 * a site administrator may use them; SOURCE_PATH_ALLOWLIST opens folders to everyone.
 */
let h: Harness;
let githubRoot: string;
let repo: TestRepo;

beforeAll(async () => {
  githubRoot = mkdtempSync(join(tmpdir(), 'slipway-github-'));
  mkdirSync(join(githubRoot, 'acme'));
  repo = new TestRepo();
  repo.commit({ Procfile: 'web: true\n' });
  execFileSync('git', ['clone', '-q', '--bare', repo.dir, join(githubRoot, 'acme', 'shop.git')]);
  // No allow-list: local paths are for administrators only.
  h = await createHarness({ GITHUB_URL: `file://${githubRoot}`, SOURCE_PATH_ALLOWLIST: '' }, { jobs: true });
});

afterAll(async () => {
  await h?.close();
  repo?.remove();
  rmSync(githubRoot, { recursive: true, force: true });
});

async function setRepository(t: TestApp, github_repository: string | null) {
  return h.app.inject({
    method: 'PATCH',
    url: `/v1/applications/${t.appId}/settings`,
    headers: t.user.headers,
    payload: { github_repository },
  });
}

async function storedRepository(t: TestApp) {
  return (await h.ctx.db.selectFrom('applications').select('github_repository').where('id', '=', t.appId).executeTakeFirstOrThrow())
    .github_repository;
}

describe('where applications may be built from (issue 10)', () => {
  it('refuses a member local paths, file:// and non-public hosts with one generic message, changing nothing', async () => {
    const member = await createApp(h, { github_repository: 'acme/shop' });
    const local = [repo.dir, `file://${repo.dir}`, `file://${githubRoot}/acme/shop.git`];
    const network = [
      'http://127.0.0.1/acme/app.git',
      'http://localhost:8080/acme/app.git',
      // Names that resolve to loopback, whatever the transport.
      'https://localhost/acme/app.git',
      'ssh://git@localhost/acme/app.git',
      'git@localhost:acme/app.git',
      'https://10.1.2.3/acme/app.git',
      'http://169.254.169.254/latest/meta-data',
      'http://[::1]/x.git',
      'http://[::ffff:127.0.0.1]/x.git',
      'http://100.64.0.1/x.git',
      'ssh://git@192.168.1.10/acme/app.git',
      'git@127.0.0.1:acme/app.git',
      'git://8.8.8.8/acme/app.git',
      'http://nothing-here.invalid/acme/app.git',
      'http://0.0.0.0/x.git',
    ];
    for (const value of [...local, ...network]) {
      const r = await setRepository(member, value);
      expect(r.statusCode, value).toBe(422);
      const expected = local.includes(value) ? REFUSED_LOCAL : REFUSED_ADDRESS;
      expect(r.json().message, value).toBe(`github_repository: ${expected.replace(/^github_repository:?\s*/, '')}`);
      expect(await storedRepository(member)).toBe('acme/shop');
    }
    // owner/repo may not climb out of GITHUB_URL's folder.
    for (const value of ['../acme', './shop', 'acme/..', '..//shop']) {
      const r = await setRepository(member, value);
      expect(r.statusCode, value).toBe(422);
      expect(await storedRepository(member)).toBe('acme/shop');
    }
    // What a member may use: owner/repo on GITHUB_URL, a public host's URL.
    for (const value of ['acme/shop', 'https://8.8.8.8/acme/app.git', 'ssh://git@8.8.4.4/acme/app.git', 'git@1.1.1.1:acme/app.git', null]) {
      const r = await setRepository(member, value);
      expect(r.statusCode, `${value}: ${r.body}`).toBe(200);
    }
    expect((await setRepository(member, 'acme/shop')).statusCode).toBe(200);
    expect((await buildAndWait(h, member)).detail.built).toBe(true);
  });

  it('lets an administrator use local sources; a member cannot take them over; values stored earlier are refused at build time', async () => {
    const admin = await createApp(h, {}, { admin: true });
    expect((await setRepository(admin, repo.dir)).statusCode).toBe(200);
    expect((await buildAndWait(h, admin)).detail.built).toBe(true);
    expect((await setRepository(admin, 'http://127.0.0.1:9/acme/app.git')).statusCode).toBe(200);
    expect((await setRepository(admin, `file://${repo.dir}`)).statusCode).toBe(200);

    // A member of the administrator's organization may build what the administrator saved, not save it again.
    const member = await h.user();
    const orgSlug = (await h.ctx.db.selectFrom('organizations').select('slug').where('id', '=', admin.orgId).executeTakeFirstOrThrow())
      .slug;
    const invited = await h.app.inject({
      method: 'POST',
      url: `/v1/organizations/${orgSlug}/members`,
      headers: admin.user.headers,
      payload: { username: member.username },
    });
    expect(invited.statusCode, invited.body).toBeLessThan(300);
    const asMember = { ...admin, user: member };
    expect((await buildAndWait(h, asMember)).detail.built).toBe(true);
    expect((await setRepository(asMember, `file://${repo.dir}`)).statusCode).toBe(422);

    // A member's local path stored before the policy existed: the build refuses it.
    const old = await createApp(h, {});
    await h.ctx.db.updateTable('applications').set({ github_repository: repo.dir }).where('id', '=', old.appId).execute();
    const refused = await buildAndWait(h, old);
    expect(refused.detail.error).toBe(true);
    expect(refused.log.error_detail).toBe(REFUSED_LOCAL);
    await h.ctx.db
      .updateTable('applications')
      .set({ github_repository: 'http://127.0.0.1:9/acme/app.git' })
      .where('id', '=', old.appId)
      .execute();
    expect((await buildAndWait(h, old)).log.error_detail).toBe(REFUSED_ADDRESS);
  });

  it('opens the folders of SOURCE_PATH_ALLOWLIST to every member (and nothing outside them, symlinks included)', async () => {
    const member = await createApp(h, {});
    h.ctx.config.SOURCE_PATH_ALLOWLIST = join(repo.dir, '..');
    try {
      expect((await setRepository(member, repo.dir)).statusCode).toBe(200);
      expect((await buildAndWait(h, member)).detail.built).toBe(true);
      h.ctx.config.SOURCE_PATH_ALLOWLIST = '/srv/nothing';
      expect((await setRepository(member, repo.dir)).statusCode).toBe(422);
      // A link inside an allowed folder to a repository outside it does not count as inside.
      const allowed = mkdtempSync(join(tmpdir(), 'slipway-allowed-'));
      symlinkSync(repo.dir, join(allowed, 'link'));
      h.ctx.config.SOURCE_PATH_ALLOWLIST = allowed;
      expect((await setRepository(member, join(allowed, 'link'))).statusCode).toBe(422);
      rmSync(allowed, { recursive: true, force: true });
      expect((await buildAndWait(h, member)).log.error_detail).toBe(REFUSED_LOCAL);
    } finally {
      h.ctx.config.SOURCE_PATH_ALLOWLIST = '';
    }
  });

  it('pins a member fetch to the checked address and forbids redirects', async () => {
    const config = { GITHUB_URL: 'https://github.com' };
    expect(await checkMemberSource('https://8.8.8.8:8443/acme/app.git', config)).toEqual({
      followRedirects: false,
      resolve: '8.8.8.8:8443:8.8.8.8',
    });
    // ssh: the address checked, with the host key of the name.
    expect(await checkMemberSource('ssh://git@8.8.4.4:2222/acme/app.git', config)).toEqual({
      followRedirects: false,
      ssh: { host: '8.8.4.4', address: '8.8.4.4' },
    });
    expect(await checkMemberSource('git@1.1.1.1:acme/app.git', config)).toEqual({
      followRedirects: false,
      ssh: { host: '1.1.1.1', address: '1.1.1.1' },
    });
    expect(await checkMemberSource('https://github.com/acme/app.git', config)).toEqual({ followRedirects: true });
    expect(await checkMemberSource('acme/app', config)).toEqual({ followRedirects: true });
  });

  it('fetches from the pinned address, never from what the name resolves to at fetch time (DNS rebinding)', async () => {
    // A listener stands in for the host the policy checked; the name itself does not resolve at all
    // (.invalid), so a connection proves git and ssh went to the pinned address without asking DNS again.
    const connections: string[] = [];
    const server = createServer((socket) => {
      connections.push(socket.remoteAddress ?? '');
      socket.destroy();
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    const port = (server.address() as AddressInfo).port;
    const work = mkdtempSync(join(tmpdir(), 'slipway-pinned-'));
    const fetch = (repository: string, pins?: FetchPins) =>
      fetchSource({
        repository,
        ref: 'main',
        githubUrl: 'https://github.com',
        pins,
        workDir: join(work, 'w'),
        destination: join(work, 'd'),
      });
    try {
      const sshUrl = `ssh://git@rebound.invalid:${port}/acme/app.git`;
      await expect(fetch(sshUrl, { followRedirects: false, ssh: { host: 'rebound.invalid', address: '127.0.0.1' } })).rejects.toThrow(
        /could not fetch ref 'main' from ssh:.*rebound\.invalid/,
      );
      expect(connections.length).toBe(1);
      const httpsUrl = `https://rebound.invalid:${port}/acme/app.git`;
      await expect(fetch(httpsUrl, { followRedirects: false, resolve: `rebound.invalid:${port}:127.0.0.1` })).rejects.toThrow(
        `could not fetch ref 'main' from https://rebound.invalid:${port}/acme/app.git`,
      );
      expect(connections.length).toBe(2);
      // Unpinned (an administrator's source), the name is resolved at fetch time: nothing reaches the listener.
      await expect(fetch(sshUrl)).rejects.toThrow(/could not fetch/);
      await expect(fetch(httpsUrl)).rejects.toThrow(/could not fetch/);
      expect(connections.length).toBe(2);
    } finally {
      server.close();
      rmSync(work, { recursive: true, force: true });
    }
  });
});
