import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signBody } from '../../src/modules/github/signature.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { TestRepo } from '../helpers/git-repo.js';
import { buildAndWait, createApp, type TestApp } from './fixtures.js';

const SECRET = 'hook-secret-4d2c';
let h: Harness;
let githubRoot: string;
let source: TestRepo;
let pushedSha: string;
const apps: Record<string, TestApp> = {};

beforeAll(async () => {
  // A folder of bare repositories stands in for GitHub: acme/shop lives at <root>/acme/shop.git.
  githubRoot = mkdtempSync(join(tmpdir(), 'slipway-github-'));
  mkdirSync(join(githubRoot, 'acme'));
  source = new TestRepo();
  pushedSha = source.commit({ Procfile: 'web: true\n' });
  execFileSync('git', ['clone', '-q', '--bare', source.dir, join(githubRoot, 'acme', 'shop.git')]);
  h = await createHarness({ GITHUB_WEBHOOK_SECRET: SECRET, GITHUB_URL: `file://${githubRoot}` }, { jobs: true });
  apps.main = await createApp(h, { github_repository: 'acme/shop', auto_deploy_branch: 'main' });
  // An administrator: github.com does not resolve on this offline machine, which a member's source may not (issue 10).
  apps.byUrl = await createApp(h, { github_repository: 'https://github.com/Acme/Shop.git', auto_deploy_branch: 'main' }, { admin: true });
  apps.otherBranch = await createApp(h, { github_repository: 'acme/shop', auto_deploy_branch: 'develop' });
  apps.otherRepo = await createApp(h, { github_repository: 'acme/other', auto_deploy_branch: 'main' });
});
afterAll(async () => {
  await h?.close();
  source?.remove();
  if (githubRoot) rmSync(githubRoot, { recursive: true, force: true });
});

const pushPayload = () => ({
  ref: 'refs/heads/main',
  before: '0'.repeat(40),
  after: pushedSha,
  deleted: false,
  repository: {
    full_name: 'acme/shop',
    clone_url: 'https://github.com/acme/shop.git',
    ssh_url: 'git@github.com:acme/shop.git',
    html_url: 'https://github.com/acme/shop',
  },
});

function deliver(event: string, payload: unknown, options: { signature?: string; delivery?: string } = {}) {
  const body = Buffer.from(JSON.stringify(payload));
  return h.app.inject({
    method: 'POST',
    url: '/v1/integrations/github/hooks',
    payload: body,
    headers: {
      'content-type': 'application/json',
      'x-github-event': event,
      'x-github-delivery': options.delivery ?? `d-${Math.random()}`,
      'x-hub-signature-256': options.signature ?? signBody(SECRET, body),
    },
  });
}

async function hookCount() {
  return Number(
    (
      await h.ctx.db
        .selectFrom('github_hooks')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );
}

async function chainJobs() {
  const { rows } = await sql<{ app: string; record: string }>`
    select data->>'applicationId' as app, data->>'recordId' as record from pipeline_jobs where kind = 'chain'`.execute(h.ctx.db);
  return rows;
}

describe('POST /integrations/github/hooks', () => {
  it('refuses every hook while no secret is configured', async () => {
    const saved = h.ctx.config.GITHUB_WEBHOOK_SECRET;
    h.ctx.config.GITHUB_WEBHOOK_SECRET = undefined;
    try {
      const res = await deliver('ping', { zen: 'Keep it simple' });
      expect(res.statusCode).toBe(403);
      expect(res.json()).toEqual({ status: 403, message: 'GitHub hooks are refused: GITHUB_WEBHOOK_SECRET is not configured' });
    } finally {
      h.ctx.config.GITHUB_WEBHOOK_SECRET = saved;
    }
    expect(await hookCount()).toBe(0);
  });

  it('answers 403 to a bad or missing signature and stores nothing', async () => {
    const body = Buffer.from(JSON.stringify(pushPayload()));
    const wrongKey = await deliver('push', pushPayload(), { signature: signBody('not-the-secret', body) });
    expect(wrongKey.statusCode).toBe(403);
    expect(wrongKey.json().message).toBe('Invalid X-Hub-Signature-256 signature');
    // A signature of other bytes than those sent (the payload was re-serialized) fails too.
    const tampered = await deliver('push', { ...pushPayload(), after: 'f'.repeat(40) }, { signature: signBody(SECRET, body) });
    expect(tampered.statusCode).toBe(403);
    const missing = await h.app.inject({
      method: 'POST',
      url: '/v1/integrations/github/hooks',
      payload: pushPayload(),
      headers: { 'x-github-event': 'push' },
    });
    expect(missing.statusCode).toBe(403);
    expect(await hookCount()).toBe(0);
    expect(await chainJobs()).toEqual([]);
  });

  it('acknowledges a ping', async () => {
    const res = await deliver('ping', { zen: 'Design for failure.', hook_id: 1 });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ ok: true, hook_id: expect.any(String) });
    const stored = await h.ctx.db.selectFrom('github_hooks').selectAll().where('id', '=', res.json().hook_id).executeTakeFirstOrThrow();
    expect(stored).toMatchObject({ event: 'ping', triggered: [] });
  });

  it('starts the chain at the pushed commit for the applications following that branch of that repository only', async () => {
    const res = await deliver('push', pushPayload(), { delivery: 'delivery-1' });
    expect(res.statusCode).toBe(200);
    const jobs = await chainJobs();
    expect(jobs.map((j) => j.app).sort()).toEqual([apps.main!.appId, apps.byUrl!.appId].sort());
    const stored = await h.ctx.db.selectFrom('github_hooks').selectAll().where('id', '=', res.json().hook_id).executeTakeFirstOrThrow();
    expect(stored).toMatchObject({
      event: 'push',
      repository: 'acme/shop',
      ref: 'refs/heads/main',
      after_sha: pushedSha,
      delivery_id: 'delivery-1',
    });
    expect(stored.triggered.map((t) => t.application_id).sort()).toEqual(jobs.map((j) => j.app).sort());
    // Each chain starts with an image record at the pushed commit.
    const image = await h.ctx.db.selectFrom('images').selectAll().where('id', '=', jobs[0]!.record).executeTakeFirstOrThrow();
    expect(image).toMatchObject({ build_ref: pushedSha, status: 'building', version: 1 });

    // A redelivery of the same hook starts nothing new.
    const again = await deliver('push', pushPayload(), { delivery: 'delivery-1' });
    expect(again.json().hook_id).toBe(res.json().hook_id);
    expect(await chainJobs()).toHaveLength(2);
    // Pushes to another branch, branch deletions and other events start nothing.
    await deliver('push', { ...pushPayload(), ref: 'refs/heads/feature' });
    await deliver('push', { ...pushPayload(), deleted: true, after: '0'.repeat(40) });
    await deliver('issues', { action: 'opened', repository: { full_name: 'acme/shop' } });
    expect(await chainJobs()).toHaveLength(2);
  });

  it('builds owner/repo from GITHUB_URL (a folder of bare repositories)', async () => {
    const built = await buildAndWait(h, apps.otherBranch!, { ref: 'main' });
    expect(built.log.error_detail).toBeNull();
    expect(built.detail).toMatchObject({ built: true, commit_sha: pushedSha });
    const missing = await buildAndWait(h, apps.otherRepo!);
    expect(missing.log.error_detail).toMatch(new RegExp(`^could not fetch file://${githubRoot}/acme/other.git: `));
  });

  it('rejects a signed payload that is not JSON', async () => {
    const body = Buffer.from('not json');
    const res = await h.app.inject({
      method: 'POST',
      url: '/v1/integrations/github/hooks',
      payload: body,
      headers: { 'content-type': 'application/json', 'x-github-event': 'push', 'x-hub-signature-256': signBody(SECRET, body) },
    });
    expect(res.statusCode).toBe(400);
  });
});
