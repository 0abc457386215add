import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../helpers/harness.js';
import { TestRepo } from '../helpers/git-repo.js';
import { buildAndWait, createApp, nodeApp, setConfig } from './fixtures.js';

let h: Harness;
const repos: TestRepo[] = [];
beforeAll(async () => {
  h = await createHarness({}, { jobs: true });
});
afterAll(async () => {
  await h?.close();
  for (const r of repos) r.remove();
});

/** Writes the setting past the API's checks, as a value saved before they existed. */
async function storeRepository(appId: string, repository: string) {
  await h.ctx.db.updateTable('applications').set({ github_repository: repository }).where('id', '=', appId).execute();
}

function repo() {
  const r = new TestRepo();
  repos.push(r);
  return r;
}

describe('image builds from a git repository', () => {
  it('builds a Node app: commit, Procfile processes, build-time vars in the build env, secrets scrubbed', async () => {
    const r = repo();
    const sha = r.commit(nodeApp());
    const t = await createApp(h, { github_repository: r.dir, auto_deploy_branch: 'main' });
    await setConfig(h, t, 'BUILD_GREETING', 'hi-from-build', { buildtime: true });
    await setConfig(h, t, 'API_TOKEN', 'tok-3f9a7c21-very-secret', { secret: true, buildtime: true });
    await setConfig(h, t, 'RUNTIME_ONLY', 'not-for-builds');
    await setConfig(h, t, 'PEM_KEY', '-----BEGIN KEY-----\nMIIEpAIBAAKCAQEAxk9secretline\n-----END KEY-----', {
      secret: true,
      buildtime: true,
    });

    const { log, detail, version } = await buildAndWait(h, t);
    expect(log.error_detail).toBeNull();
    expect(log.status).toBe('built');
    expect(version).toBe(1);
    expect(log.build_step).toEqual({ steps: ['Resolve', 'Build', 'Export', 'Push', 'Done'], current: 4 });
    expect(log.log_text).toContain('----- Build');
    expect(log.log_text).toContain('greeting at build time: hi-from-build');
    // The secret reached the build (it is build-time) but not the log.
    expect(log.log_text).toContain('token at build time: **secret**');
    expect(log.log_text).not.toContain('tok-3f9a7c21-very-secret');
    // A multi-line secret printed line by line is hidden line by line.
    expect(log.log_text).toContain('pem at build time: **secret**');
    expect(log.log_text).not.toContain('MIIEpAIBAAKCAQEAxk9secretline');
    // The platform's own environment never reaches a build.
    expect(log.log_text).toContain('database url at build time: undefined');
    expect(log.log_text).toContain('$ npm ci');
    expect(log.log_text).toContain('$ npm run build');

    expect(detail).toMatchObject({
      version: 1,
      built: true,
      error: false,
      commit_sha: sha,
      build_ref: 'main',
      repository_name: `${t.orgSlug}/shop/web`,
      procfile: nodeApp().Procfile,
      processes: { web: { cmd: 'node server.js', env: {} }, worker: { cmd: 'node -e "setInterval(() => {}, 1000)"', env: {} } },
    });
    expect(detail.image_id).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(detail.image_metadata).toMatchObject({ builder: 'source', detected: 'node', build_commands: ['npm ci', 'npm run build'] });
    expect(JSON.stringify(detail)).not.toContain('tok-3f9a7c21');

    // The artifact: the snapshot at the commit, prepared, under DATA_DIR/images/<app>/<version>/app.
    const artifact = join(h.dataDir, 'images', t.appId, '1', 'app');
    expect(readFileSync(join(artifact, 'build-output.txt'), 'utf8')).toBe('hi-from-build');
    expect(existsSync(join(artifact, 'server.js'))).toBe(true);
    expect(existsSync(join(h.dataDir, 'builds'))).toBe(true);
    expect(h.logs()).not.toContain('tok-3f9a7c21');
  });

  it('builds a Python app into a virtualenv that its processes use', async () => {
    const r = repo();
    r.commit({
      'requirements.txt': '# no dependencies: the machine has no package index\n',
      'app.py':
        'import os, http.server\nhttp.server.HTTPServer(("", int(os.environ["PORT"])), http.server.SimpleHTTPRequestHandler).serve_forever()\n',
      Procfile: 'web: python app.py\n',
    });
    const t = await createApp(h, { github_repository: r.dir });
    const { log, detail, version } = await buildAndWait(h, t);
    expect(log.error_detail).toBeNull();
    const artifact = join(h.dataDir, 'images', t.appId, String(version), 'app');
    expect(detail.image_metadata).toMatchObject({ detected: 'python' });
    expect(detail.processes.web).toMatchObject({ cmd: 'python app.py', env: { VIRTUAL_ENV: join(artifact, '.venv') } });
    expect(detail.processes.web.env.PATH.startsWith(`${join(artifact, '.venv', 'bin')}:`)).toBe(true);
    expect(existsSync(join(artifact, '.venv', 'bin', 'python'))).toBe(true);
    expect(log.log_text).toContain('$ pip install -r requirements.txt');
  });

  it('builds a ref from the request body and honours subdirectory', async () => {
    const r = repo();
    const first = r.commit({ 'svc/Procfile': 'web: python3 -m http.server $PORT\n', 'svc/index.html': 'one' });
    r.commit({ 'svc/index.html': 'two' });
    r.git('tag', 'v1', first);
    const t = await createApp(h, { github_repository: r.dir, auto_deploy_branch: 'main', subdirectory: 'svc' });
    const byTag = await buildAndWait(h, t, { ref: 'v1' });
    expect(byTag.log.error_detail).toBeNull();
    expect(byTag.detail).toMatchObject({
      commit_sha: first,
      build_ref: 'v1',
      processes: { web: { cmd: 'python3 -m http.server $PORT', env: {} } },
    });
    expect(readFileSync(join(h.dataDir, 'images', t.appId, String(byTag.version), 'app', 'index.html'), 'utf8')).toBe('one');
    expect(byTag.detail.image_metadata.detected).toBe('procfile');
    // An abbreviated commit works too.
    const byShortSha = await buildAndWait(h, t, { ref: first.slice(0, 10) });
    expect(byShortSha.detail).toMatchObject({ built: true, commit_sha: first, version: 2 });
    expect(byShortSha.detail.image_id).toBe(byTag.detail.image_id);
  });

  it('fails a build of a missing ref with a clear error_detail', async () => {
    const r = repo();
    r.commit(nodeApp());
    const t = await createApp(h, { github_repository: r.dir, auto_deploy_branch: 'main' });
    const { log, detail } = await buildAndWait(h, t, { ref: 'no-such-branch' });
    expect(log.status).toBe('error');
    expect(detail).toMatchObject({ built: false, error: true, commit_sha: null, error_code: 'source_unavailable' });
    expect(log.error_detail).toBe(`ref 'no-such-branch' was not found in file://${r.dir}`);
    expect(log.build_step.current).toBe(0);
    expect(existsSync(join(h.dataDir, 'images', t.appId, '1'))).toBe(false);
  });

  it('fails a build with a bad Procfile, naming the line', async () => {
    const r = repo();
    r.commit({ ...nodeApp(), Procfile: 'web: node server.js\nthis line has no colon\n' });
    const t = await createApp(h, { github_repository: r.dir, auto_deploy_branch: 'main' });
    const { log } = await buildAndWait(h, t);
    expect(log.status).toBe('error');
    expect(log.error_detail).toBe('Procfile line 2: expected "<process type>: <command>", got "this line has no colon"');

    r.commit({ Procfile: 'Web: node server.js\n' });
    const second = await buildAndWait(h, t);
    expect(second.log.error_detail).toMatch(/^Procfile line 1: process type "Web" must start with a lowercase letter/);
  });

  it('fails when a build command fails, and refuses to build without a repository', async () => {
    const r = repo();
    r.commit({ 'slipway.json': JSON.stringify({ build: 'echo building; exit 3' }), Procfile: 'web: true\n' });
    const t = await createApp(h, { github_repository: r.dir, auto_deploy_branch: 'main' });
    const failed = await buildAndWait(h, t);
    expect(failed.log.error_detail).toBe('build command "echo building; exit 3" failed with exit code 3');
    expect(failed.log.error_code).toBe('build_failed');
    expect(failed.detail.error_code).toBe('build_failed');
    expect(failed.log.log_text).toContain('building');
    expect(failed.log.build_step.current).toBe(1);

    // Without a repository there is nothing to build: refused at once, no record.
    const bare = await createApp(h);
    const refused = await h.app.inject({ method: 'POST', url: `/v1/images/${bare.appId}/build`, headers: bare.user.headers });
    expect(refused.statusCode).toBe(422);
    expect(refused.json().message).toBe('github_repository: set the repository to build from (PATCH /applications/{id}/settings) first');
    expect(
      (await h.app.inject({ method: 'GET', url: `/v1/images/${bare.appId}`, headers: bare.user.headers })).json().pagination.total,
    ).toBe(0);
  });

  it('fetches only over plain transports, and local paths only inside LOCAL_REPOSITORY_ROOTS when set', async () => {
    const r = repo();
    r.commit({ Procfile: 'web: true\n' });
    // Refused on save (400, nothing stored); a value stored before that check existed is refused by the build.
    const helper = await createApp(h, { auto_deploy_branch: 'main' });
    const saved = await h.app.inject({
      method: 'PATCH',
      url: `/v1/applications/${helper.appId}/settings`,
      headers: helper.user.headers,
      payload: { github_repository: 'ext::sh -c touch% /tmp/slipway-should-not-exist' },
    });
    expect(saved.statusCode).toBe(422);
    await storeRepository(helper.appId, 'ext::sh -c touch% /tmp/slipway-should-not-exist');
    const refused = await buildAndWait(h, helper);
    expect(refused.log.error_detail).toBe(
      "github_repository 'ext::sh -c touch% /tmp/slipway-should-not-exist' is not owner/repo, a git URL or an absolute path",
    );
    expect(existsSync('/tmp/slipway-should-not-exist')).toBe(false);
    // An address that reads as a git option (here `--upload-pack`, which runs a command) is refused.
    // (`cd` alone goes to $HOME, so the marker would outlive the build's scratch directory.)
    const marker = `slipway-upload-pack-${process.pid}`;
    const optionLike = `--upload-pack=cd;touch\${IFS}${marker};echo@h:x`;
    const asOption = await createApp(h, { auto_deploy_branch: 'main' });
    await storeRepository(asOption.appId, optionLike);
    const refusedOption = await buildAndWait(h, asOption);
    expect(refusedOption.detail.error).toBe(true);
    expect(refusedOption.log.error_detail).toBe(`github_repository '${optionLike}' is not owner/repo, a git URL or an absolute path`);
    expect(existsSync(join(homedir(), marker))).toBe(false);

    const t = await createApp(h, { github_repository: `file://${r.dir}`, auto_deploy_branch: 'main' });
    h.ctx.config.LOCAL_REPOSITORY_ROOTS = '/srv/repos, /nonexistent';
    try {
      const outside = await buildAndWait(h, t);
      expect(outside.log.error_detail).toBe(`local repository file://${r.dir} is outside the allowed roots (LOCAL_REPOSITORY_ROOTS)`);
      h.ctx.config.LOCAL_REPOSITORY_ROOTS = join(r.dir, '..');
      const inside = await buildAndWait(h, t);
      expect(inside.detail.built).toBe(true);
    } finally {
      h.ctx.config.LOCAL_REPOSITORY_ROOTS = undefined;
    }
  });

  it('keeps credentials written into the repository address out of the log, the error and the record', async () => {
    // Nothing listens on port 9: the fetch fails, and its error names the address.
    // A loopback address: a site administrator's choice (members may not use one).
    const t = await createApp(
      h,
      { github_repository: 'http://builder:s3cr3t-token@127.0.0.1:9/acme/app.git', auto_deploy_branch: 'main' },
      { admin: true },
    );
    const { log, detail } = await buildAndWait(h, t);
    expect(detail.error).toBe(true);
    expect(log.error_detail).toContain('could not fetch http://127.0.0.1:9/acme/app.git');
    const record = await h.ctx.db.selectFrom('images').selectAll().where('id', '=', detail.id).executeTakeFirstOrThrow();
    for (const text of [JSON.stringify(log), JSON.stringify(detail), JSON.stringify(record), h.logs()]) {
      expect(text).not.toContain('s3cr3t-token');
    }
  });

  it('numbers concurrent builds 1..n without gaps or duplicates, and lists them newest first', async () => {
    const r = repo();
    r.commit({ Procfile: 'web: true\n' });
    const t = await createApp(h, { github_repository: r.dir, auto_deploy_branch: 'main' });
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => h.app.inject({ method: 'POST', url: `/v1/images/${t.appId}/build`, headers: t.user.headers })),
    );
    expect(answers.map((a) => a.statusCode)).toEqual(Array(8).fill(202));
    expect(answers.map((a) => a.json().version).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    const page = await h.app.inject({ method: 'GET', url: `/v1/images/${t.appId}?per_page=3&page=2`, headers: t.user.headers });
    expect(page.statusCode).toBe(200);
    expect(page.json().pagination).toEqual({ page: 2, per_page: 3, total: 8, pages: 3 });
    expect(page.json().items.map((i: { version: number }) => i.version)).toEqual([5, 4, 3]);
  });

  it('keeps images private to the organization', async () => {
    const r = repo();
    r.commit({ Procfile: 'web: true\n' });
    const t = await createApp(h, { github_repository: r.dir });
    const { image_id } = await buildAndWait(h, t);
    const stranger = await h.user();
    for (const url of [`/v1/images/${image_id}/detail`, `/v1/images/${image_id}/log`, `/v1/images/${t.appId}`]) {
      expect((await h.app.inject({ method: 'GET', url, headers: stranger.headers })).statusCode).toBe(403);
    }
    expect((await h.app.inject({ method: 'POST', url: `/v1/images/${t.appId}/build`, headers: stranger.headers })).statusCode).toBe(403);
    expect(
      (await h.app.inject({ method: 'GET', url: '/v1/images/00000000-0000-7000-8000-000000000000/detail', headers: t.user.headers }))
        .statusCode,
    ).toBe(404);
    expect((await h.app.inject({ method: 'GET', url: `/v1/images/${image_id}/detail` })).statusCode).toBe(401);
  });
});
