import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signBody } from '../../src/modules/github/signature.js';
import { FakeGitHub } from '../helpers/fake-github.js';
import { TestRepo } from '../helpers/git-repo.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';
import { buildAndWait, createApp, nodeApp, type TestApp } from './fixtures.js';

/**
 * Issue 19's GitHub App leftovers: installation hooks record which repositories an
 * installation covers (a build outside them fails clearly), deployments of an application
 * with `github_environment_name` reach GitHub's Deployments API in order, and the
 * installation token never shows in the process list while git clones.
 */
const SECRET = 'hook-secret-reporting';
let h: Harness;
let github: FakeGitHub;
let projectRoot: string;
let source: TestRepo;
let sha: string;

beforeAll(async () => {
  projectRoot = mkdtempSync(join(tmpdir(), 'slipway-fake-github-'));
  source = new TestRepo();
  sha = source.commit(nodeApp('reported'));
  mkdirSync(join(projectRoot, 'acme'));
  execFileSync('git', ['clone', '-q', '--bare', source.dir, join(projectRoot, 'acme', 'private-app.git')]);
  github = await new FakeGitHub(projectRoot).start();
  github.installations.add('5151');
  h = await createHarness(
    {
      GITHUB_URL: github.gitUrl,
      GITHUB_API_URL: github.apiUrl,
      GITHUB_APP_ID: github.appId,
      GITHUB_APP_PRIVATE_KEY: github.privateKeyPem,
      GITHUB_WEBHOOK_SECRET: SECRET,
      ROUTER_HOST: '127.0.0.1',
      ROUTER_PORT: 0,
      RUNTIME_STOP_GRACE_MS: 1000,
      ROUTER_DRAIN_TIMEOUT_MS: 1000,
    },
    { jobs: true, runtime: true },
  );
}, 60_000);
afterAll(async () => {
  await h?.close();
  await github?.close();
  source?.remove();
  if (projectRoot) rmSync(projectRoot, { recursive: true, force: true });
});

async function hook(event: string, payload: unknown) {
  const body = Buffer.from(JSON.stringify(payload));
  const res = await h.app.inject({
    method: 'POST',
    url: '/v1/integrations/github/hooks',
    payload: body,
    headers: {
      'content-type': 'application/json',
      'x-github-event': event,
      'x-github-delivery': randomUUID(),
      'x-hub-signature-256': signBody(SECRET, body),
    },
  });
  expect(res.statusCode).toBe(200);
  return res.json();
}

const privateApp = (settings: Record<string, unknown> = {}): Promise<TestApp> =>
  createApp(h, {
    github_repository: 'acme/private-app',
    github_repository_is_private: true,
    github_app_installation_id: 5151,
    auto_deploy_branch: 'main',
    ...settings,
  });

describe('installation hooks', () => {
  it('record what an installation covers: a build outside it fails with a clear reason, and succeeds once the repository is added', async () => {
    await hook('installation', {
      action: 'created',
      installation: { id: 5151, account: { login: 'acme' }, repository_selection: 'selected' },
      repositories: [{ full_name: 'acme/other' }],
    });
    const rows = await h.ctx.db.selectFrom('github_installation_repositories').selectAll().execute();
    expect(rows.map((r) => [r.installation_id, r.repository])).toEqual([[5151, 'acme/other']]);

    const t = await privateApp();
    const refused = await buildAndWait(h, t);
    expect(refused.detail.built).toBe(false);
    expect(refused.log.error_detail).toContain('The GitHub App installation 5151 does not cover acme/private-app');
    expect(github.issued).toHaveLength(0);

    await hook('installation_repositories', {
      action: 'added',
      installation: { id: 5151 },
      repositories_added: [{ full_name: 'Acme/Private-App' }],
      repositories_removed: [{ full_name: 'acme/other' }],
    });
    const after = await h.ctx.db.selectFrom('github_installation_repositories').select('repository').execute();
    expect(after.map((r) => r.repository)).toEqual(['acme/private-app']);
    const built = await buildAndWait(h, t);
    expect(built.log.error_detail).toBeNull();
    expect(built.detail.built).toBe(true);
  });
});

describe('the installation token and the process list', () => {
  it('never appears on a command line while git clones (sampled from /proc during the clone)', async () => {
    const t = await privateApp();
    github.gitDelayMs = 300;
    const seen = new Set<string>();
    let sampling = true;
    const sample = async () => {
      while (sampling) {
        for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
          try {
            const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
            if (cmdline) seen.add(cmdline);
          } catch {
            // The process ended while being read.
          }
        }
        await new Promise((r) => setTimeout(r, 5));
      }
    };
    const sampler = sample();
    try {
      const build = await buildAndWait(h, t);
      expect(build.detail.built).toBe(true);
    } finally {
      sampling = false;
      await sampler;
      github.gitDelayMs = 0;
    }
    // The sampling did catch git talking to the stand-in (the clone was watched) ...
    const gitCommands = [...seen].filter((c) => c.startsWith('git ') && c.includes(github.gitUrl));
    expect(gitCommands.length).toBeGreaterThan(0);
    // ... and no command line held a token issued so far, plain or as basic credentials.
    for (const { token } of github.issued) {
      const basic = Buffer.from(`x-access-token:${token}`).toString('base64');
      for (const c of seen) {
        expect(c).not.toContain(token);
        expect(c).not.toContain(basic);
      }
    }
  });
});

describe("GitHub's Deployments API", () => {
  it('a push deploys an application with github_environment_name: created, in progress, then success with its URL', async () => {
    const t = await privateApp({ github_environment_name: 'production-gh' });
    await hook('push', { ref: 'refs/heads/main', after: sha, repository: { full_name: 'acme/private-app' } });
    await waitFor(
      'a final deployment status',
      () => github.deploymentStatuses.some((s) => s.state === 'success' || s.state === 'failure'),
      180_000,
      200,
    );
    const mine = github.deployments.filter((d) => d.environment === 'production-gh');
    expect(mine).toEqual([{ id: expect.any(Number), repository: 'acme/private-app', ref: sha, environment: 'production-gh' }]);
    const statuses = github.deploymentStatuses.filter((s) => s.deployment === mine[0]!.id);
    expect(statuses.map((s) => s.state)).toEqual(['in_progress', 'success']);
    expect(statuses[1]!.environment_url).toMatch(/^http:\/\/web\.shop\.[a-z0-9-]+\.localhost:\d+$/);
    const deployments = await h.app.inject({ method: 'GET', url: `/v1/applications/${t.appId}/deployments`, headers: t.user.headers });
    expect(deployments.json().items[0]).toMatchObject({ status: 'complete' });
  });
});
