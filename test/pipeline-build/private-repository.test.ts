import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeGitHub } from '../helpers/fake-github.js';
import { TestRepo } from '../helpers/git-repo.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { buildAndWait, createApp, nodeApp } from './fixtures.js';

/**
 * Issue 19: a private repository is cloned with a GitHub App installation token, minted
 * from a JWT the stand-in GitHub checks with the App's public key; the token stays out of
 * every log, record and response.
 */
let h: Harness;
let github: FakeGitHub;
let projectRoot: string;
let source: TestRepo;
let sha: string;

beforeAll(async () => {
  projectRoot = mkdtempSync(join(tmpdir(), 'slipway-fake-github-'));
  source = new TestRepo();
  sha = source.commit(nodeApp('private'));
  mkdirSync(join(projectRoot, 'acme'));
  execFileSync('git', ['clone', '-q', '--bare', source.dir, join(projectRoot, 'acme', 'private-app.git')]);
  github = await new FakeGitHub(projectRoot).start();
  github.installations.add('4242');
  h = await createHarness(
    {
      GITHUB_URL: github.gitUrl,
      GITHUB_API_URL: github.apiUrl,
      GITHUB_APP_ID: github.appId,
      GITHUB_APP_PRIVATE_KEY: github.privateKeyPem,
    },
    { jobs: true },
  );
});
afterAll(async () => {
  await h?.close();
  await github?.close();
  source?.remove();
  if (projectRoot) rmSync(projectRoot, { recursive: true, force: true });
});

/** Every row of the pipeline's tables as text, to look for a token in. */
async function everyRecord(): Promise<string> {
  const tables = ['applications', 'images', 'releases', 'deployments'];
  const parts = await Promise.all(
    tables.map((t) => sql<{ row: string }>`select row_to_json(x)::text as row from ${sql.table(t)} x`.execute(h.ctx.db)),
  );
  return parts.flatMap((p) => p.rows.map((r) => r.row)).join('\n');
}

describe('private repositories through the GitHub App', () => {
  it('refuses the repository to an anonymous clone (the stand-in really is private)', async () => {
    // Asynchronously: the stand-in answers from this process.
    await expect(
      promisify(execFile)('git', ['ls-remote', `${github.gitUrl}/acme/private-app.git`], {
        env: { ...process.env, GIT_TERMINAL_PROMPT: '0' },
      }),
    ).rejects.toThrow();
    expect(github.refused.some((r) => r.startsWith('401 /git/acme/private-app.git'))).toBe(true);
  });

  it('builds with a fresh installation token that appears in no log, record or response', async () => {
    const t = await createApp(h, {
      github_repository: 'acme/private-app',
      github_repository_is_private: true,
      github_app_installation_id: 4242,
      auto_deploy_branch: 'main',
    });
    const build = await buildAndWait(h, t);
    expect(build.log.error_detail).toBeNull();
    expect(build.detail).toMatchObject({ built: true, commit_sha: sha });
    expect(build.log.log_text).toContain('Cloning with a GitHub App installation token');
    expect(github.issued.map((i) => i.installation)).toEqual(['4242']);

    // A second build reuses the cached token (it has an hour left).
    const again = await buildAndWait(h, t);
    expect(again.detail.built).toBe(true);
    expect(github.issued).toHaveLength(1);

    const { token } = github.issued[0]!;
    const basic = Buffer.from(`x-access-token:${token}`).toString('base64');
    const responses = [
      JSON.stringify(build),
      JSON.stringify(again),
      (await h.app.inject({ method: 'GET', url: `/v1/images/${t.appId}`, headers: t.user.headers })).body,
    ];
    for (const text of [h.logs(), await everyRecord(), ...responses]) {
      expect(text).not.toContain(token);
      expect(text).not.toContain(basic);
    }
  });

  it('fails the build of a private repository without an installation, with a clear reason', async () => {
    const t = await createApp(h, { github_repository: 'acme/private-app', github_repository_is_private: true, auto_deploy_branch: 'main' });
    const build = await buildAndWait(h, t);
    expect(build.detail.built).toBe(false);
    expect(build.log.error_detail).toContain('The repository is private and the application has no GitHub App installation');
  });

  it("fails with GitHub's answer when the installation does not exist", async () => {
    const t = await createApp(h, {
      github_repository: 'acme/private-app',
      github_repository_is_private: true,
      github_app_installation_id: 999,
      auto_deploy_branch: 'main',
    });
    const build = await buildAndWait(h, t);
    expect(build.detail.built).toBe(false);
    expect(build.log.error_detail).toContain('GitHub refused an installation token for installation 999 (404');
  });
});
