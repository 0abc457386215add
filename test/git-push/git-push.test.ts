import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { changingRequestsInFlight } from '../../src/platform/audit/request-audit.js';
import { slipway } from '../cli/slipway.js';
import { TestRepo } from '../helpers/git-repo.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { localRuntime } from '../helpers/local-runtime.js';
import { pythonHttpApp } from '../helpers/python-app.js';
import { routerGet } from '../helpers/router-get.js';
import { waitFor } from '../helpers/wait.js';
import { createApp, type TestApp } from '../pipeline-build/fixtures.js';
import { sandboxMissing } from '../isolation/fixtures.js';

/**
 * Issue 34: `git push` over smart HTTP from a plain git client deploys, the push output
 * carries the build and deploy log and the URL; a non-member and a force push are refused
 * with the reason and a non-zero exit.
 */
const missing = sandboxMissing();
if (missing) console.warn(`[test/git-push] ${missing}`);

let h: Harness;
let t: TestApp;
let baseUrl: string;
let repo: TestRepo;
let askpassDir: string;

/** `git push` as a child process, the API key given by GIT_ASKPASS (as a credential prompt would). */
function push(key: string, ...args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(
      'git',
      ['-c', 'credential.helper=', 'push', ...args],
      {
        cwd: repo.dir,
        env: {
          PATH: process.env.PATH,
          HOME: askpassDir,
          GIT_ASKPASS: join(askpassDir, 'askpass'),
          SLIPWAY_KEY: key,
          GIT_TERMINAL_PROMPT: '0',
        },
        timeout: 170_000,
      },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, output: `${stdout}${stderr}` }),
    );
  });
}

beforeAll(async () => {
  if (missing) return;
  h = await createHarness(
    { ROUTER_HOST: '127.0.0.1', ROUTER_PORT: 0, RUNTIME_STOP_GRACE_MS: 1000, ROUTER_DRAIN_TIMEOUT_MS: 1000 },
    { jobs: true, runtime: true },
  );
  baseUrl = await h.app.listen({ host: '127.0.0.1', port: 0 });
  t = await createApp(h, { auto_deploy_branch: 'main', health_check_path: '/', deployment_timeout: 60 });
  askpassDir = mkdtempSync(join(tmpdir(), 'slipway-askpass-'));
  writeFileSync(join(askpassDir, 'askpass'), '#!/bin/sh\ncase "$1" in Username*) echo git ;; *) echo "$SLIPWAY_KEY" ;; esac\n');
  chmodSync(join(askpassDir, 'askpass'), 0o755);
  repo = new TestRepo('slipway-git-push-');
  repo.commit({ 'server.py': pythonHttpApp("'pushed ok'"), Procfile: 'web: python3 server.py\n' }, 'first');
  const remote = await h.app.inject({ method: 'GET', url: `/v1/applications/${t.appId}/git-remote`, headers: t.user.headers });
  expect(remote.statusCode, remote.body).toBe(200);
  expect(remote.json().allow_force_push).toBe(false);
  // The CLI adds the remote, as a user would.
  const added = await slipway(
    ['git:remote', '--add', '--app', `${t.orgSlug}/shop/web`],
    { SLIPWAY_SERVER: baseUrl, SLIPWAY_API_KEY: t.user.apiKey, HOME: askpassDir },
    { cwd: repo.dir },
  );
  expect(added.code, added.stderr).toBe(0);
  expect(added.stdout).toContain(`${baseUrl}${remote.json().path}`);
  expect(repo.git('remote', 'get-url', 'slipway')).toBe(`${baseUrl}${remote.json().path}`);
}, 60_000);

afterAll(async () => {
  await h?.close();
  repo?.remove();
  if (askpassDir) rmSync(askpassDir, { recursive: true, force: true });
});

/** A plain member of the application's organization (not an admin). */
async function newMember() {
  const member = await h.user();
  const added = await h.app.inject({
    method: 'POST',
    url: `/v1/workspaces/${t.orgSlug}/members`,
    headers: t.user.headers,
    payload: { username: member.username },
  });
  expect(added.statusCode, added.body).toBeLessThan(300);
  return member;
}

describe.skipIf(missing)('git push to an application', () => {
  it('builds and deploys the pushed commit, with the log and the URL in the push output, then serves it', async () => {
    const pushed = await push(t.user.apiKey, 'slipway', 'main');
    expect(pushed.output).toContain('remote: ----- Build');
    expect(pushed.output).toMatch(/remote: Deploying main \([0-9a-f]{12}\) to production/);
    const url = /remote: Deployed to production: (\S+)/.exec(pushed.output)?.[1];
    expect(url, pushed.output).toBeTruthy();
    expect(pushed.output).not.toContain(t.user.apiKey);
    expect(pushed.output).toContain('remote: Fetching');
    expect(pushed.output).not.toContain(join(h.dataDir, 'git')); // the pushed repository's path stays unsaid
    expect(pushed.code, pushed.output).toBe(0);
    const served = await waitFor(
      'the pushed app through the edge',
      async () => {
        const got = await routerGet(localRuntime(h.ctx).router.port, new URL(url!).hostname).catch(() => null);
        return got?.status === 200 ? got.body : null;
      },
      30_000,
      200,
    );
    expect(served).toBe('pushed ok');
    // The push's reply is hijacked (no onSend): its audit closes when its handler settles, so reads run without
    // the audit's AsyncLocalStorage again (request-audit.ts).
    await waitFor('no changing request left open', async () => changingRequestsInFlight() === 0 || null, 10_000, 50);
  }, 180_000);

  it("refuses a push by someone who is not a member of the application's organization, saying why", async () => {
    const stranger = await h.user();
    const pushed = await push(stranger.apiKey, 'slipway', 'main');
    expect(pushed.code).not.toBe(0);
    expect(pushed.output).toContain(`${stranger.username} is not a member of the organization that owns this application`);
  });

  it('refuses a push to a protected environment by a member who is not an admin, saying why', async () => {
    const member = await newMember();
    const env = `/v1/workspaces/${t.orgSlug}/projects/shop/envs/production`;
    expect((await h.app.inject({ method: 'PATCH', url: env, headers: t.user.headers, payload: { protected: true } })).statusCode).toBe(200);
    try {
      repo.commit({ 'notes.txt': 'second' }, 'second');
      const pushed = await push(member.apiKey, 'slipway', 'main');
      expect(pushed.code).not.toBe(0);
      expect(pushed.output).toContain("Environment 'production' is protected: only workspace admins deploy to it");
      expect(pushed.output).toContain('[remote rejected] main -> main');
    } finally {
      await h.app.inject({ method: 'PATCH', url: env, headers: t.user.headers, payload: { protected: false } });
    }
  });

  it('refuses a force push unless the application allows it', async () => {
    // The deployed commit, rewritten: not a fast-forward of what the remote holds.
    repo.git('reset', '-q', '--hard', 'slipway/main');
    repo.git('commit', '-q', '--amend', '-m', 'rewritten');
    const pushed = await push(t.user.apiKey, '--force', 'slipway', 'main');
    expect(pushed.code).not.toBe(0);
    expect(pushed.output).toMatch(/\[remote rejected\] main -> main \(non-fast-forward\)|denying non-fast-forward/);
    const images = await h.ctx.db.selectFrom('images').select('id').where('application_id', '=', t.appId).execute();
    expect(images).toHaveLength(1);
  });
});

describe.skipIf(missing)('git push when the application allows force pushes', () => {
  it('takes a rewritten branch; a failed build rejects it, names the command to see more and moves the branch back', async () => {
    const allowed = await h.app.inject({
      method: 'PATCH',
      url: `/v1/applications/${t.appId}/git-remote`,
      headers: t.user.headers,
      payload: { allow_force_push: true },
    });
    expect(allowed.statusCode, allowed.body).toBe(200);
    expect(allowed.json().allow_force_push).toBe(true);
    const deployed = repo.git('rev-parse', 'slipway/main');
    repo.git('reset', '-q', '--hard', deployed);
    repo.git('commit', '-q', '--amend', '-m', 'rewritten again');
    repo.commit({ 'slipway.json': JSON.stringify({ build: 'echo failing-on-purpose && exit 3' }) }, 'breaks the build');
    const pushed = await push(t.user.apiKey, '--force', 'slipway', 'main');
    expect(pushed.code).not.toBe(0);
    expect(pushed.output).toContain('remote: failing-on-purpose');
    expect(pushed.output).toContain('Deploy of main to production failed: build failed');
    expect(pushed.output).toMatch(/remote: See more with: slipway builds log [0-9a-f-]{36}/);
    expect(pushed.output).toContain('[remote rejected] main -> main (build failed');
    const onServer = await new Promise<string>((resolve) =>
      execFile('git', ['--git-dir', join(h.dataDir, 'git', `${t.appId}.git`), 'rev-parse', 'refs/heads/main'], (_e, out) =>
        resolve(out.trim()),
      ),
    );
    expect(onServer).toBe(deployed);
  }, 120_000);

  it("refuses a member's deletion of the branch a protected environment deploys from, saying why", async () => {
    // A `staging` branch, stored while it deploys nowhere; then a protected environment deploys from it.
    repo.git('checkout', '-q', '-b', 'staging');
    repo.commit({ 'notes.txt': 'staging' }, 'staging');
    expect((await push(t.user.apiKey, 'slipway', 'staging')).code).toBe(0);
    repo.git('checkout', '-q', 'main');
    const envs = `/v1/workspaces/${t.orgSlug}/projects/shop/envs`;
    const created = await h.app.inject({
      method: 'POST',
      url: envs,
      headers: t.user.headers,
      payload: { name: 'staging', auto_deploy_branch: 'staging', protected: true },
    });
    expect(created.statusCode, created.body).toBe(201);
    const member = await newMember();
    const pushed = await push(member.apiKey, 'slipway', ':staging');
    expect(pushed.code).not.toBe(0);
    expect(pushed.output).toContain("Environment 'staging' is protected: only workspace admins deploy to it");
    const onServer = await new Promise<string>((resolve) =>
      execFile('git', ['--git-dir', join(h.dataDir, 'git', `${t.appId}.git`), 'rev-parse', 'refs/heads/staging'], (_e, out) =>
        resolve(out.trim()),
      ),
    );
    expect(onServer).toMatch(/^[0-9a-f]{40}$/);
  });
});
