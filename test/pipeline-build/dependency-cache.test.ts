import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../helpers/harness.js';
import { TestRepo } from '../helpers/git-repo.js';
import { pythonHttpApp } from '../helpers/python-app.js';
import { routerGet } from '../helpers/router-get.js';
import { localRuntime } from '../helpers/local-runtime.js';
import { chainDeploy, sandboxMissing } from '../isolation/fixtures.js';
import { buildAndWait, createApp, type TestApp } from './fixtures.js';

/**
 * Issue 35: a source build whose lockfile did not change reuses the dependencies its
 * environment's last install left (per application and environment), re-installs when the
 * lockfile changes or the saved install is gone, and never reads another application's.
 */
let h: Harness;
const repos: TestRepo[] = [];

/**
 * A Node app whose install (a postinstall script) writes a fresh id into node_modules and whose
 * server answers with it; its build script tries to read `peek` (another application's cache).
 */
function nodeFiles(lockVersion: string, peek = '') {
  const pkg = { name: 'deps', version: lockVersion, private: true, scripts: { postinstall: 'node install.js', build: 'node build.js' } };
  return {
    'package.json': JSON.stringify(pkg),
    'package-lock.json': JSON.stringify({
      name: 'deps',
      version: lockVersion,
      lockfileVersion: 3,
      requires: true,
      packages: { '': { name: 'deps', version: lockVersion } },
    }),
    'install.js': [
      "const fs = require('fs');",
      "const id = require('crypto').randomBytes(6).toString('hex');",
      "fs.mkdirSync('node_modules/installed', { recursive: true });",
      "fs.writeFileSync('node_modules/installed/id', id);",
      "console.log('install id ' + id);",
    ].join('\n'),
    'build.js': [
      `const peek = ${JSON.stringify(peek)};`,
      "if (peek) { try { console.log('read the other cache: ' + require('fs').readFileSync(peek, 'utf8')); }",
      "  catch (err) { console.log('cannot read the other cache: ' + err.code); } }",
    ].join('\n'),
    'server.js':
      "const id = require('fs').readFileSync('node_modules/installed/id', 'utf8');\n" +
      "require('http').createServer((q, s) => s.end('install ' + id)).listen(process.env.PORT, '127.0.0.1');\n",
    Procfile: 'web: node server.js\n',
  };
}

const installId = (log: string) => /install id ([0-9a-f]{12})/.exec(log)?.[1];
/** The directory of the application's saved install (its one environment's cache scope). */
function savedInstall(t: TestApp): string {
  const scopes = join(h.dataDir, 'cache', 'apps', t.appId, 'scopes');
  return join(
    scopes,
    readdirSync(scopes).find((s) => s.startsWith('env-'))!,
    'deps',
  );
}

beforeAll(async () => {
  h = await createHarness({ ROUTER_HOST: '127.0.0.1', ROUTER_PORT: 0 }, { jobs: true, runtime: true });
});
afterAll(async () => {
  await h?.close();
  for (const r of repos) r.remove();
});

describe.skipIf(sandboxMissing())('the saved dependency install', () => {
  let a: TestApp;
  let firstId: string;

  it('is reused while the lockfile is unchanged (the app serves what the first install made), re-installed when it changes', async () => {
    const repo = new TestRepo();
    repos.push(repo);
    repo.commit(nodeFiles('1.0.0'));
    a = await createApp(h, { github_repository: repo.dir, auto_deploy_branch: 'main', health_check_path: '/', deployment_timeout: 60 });

    const first = await buildAndWait(h, a);
    expect(first.log.error_detail).toBeNull();
    expect(first.log.log_text).toContain('dependencies: installing (no saved install for this package-lock.json)');
    expect(first.log.log_text).toContain('$ npm ci');
    expect(first.log.log_text).toContain('dependencies: installed');
    expect(first.log.log_text).toContain('dependencies: saved for the next build');
    // Each step's heading says when it began and each command how long it took, so the build's time splits.
    expect(first.log.log_text).toMatch(/^----- Build \(at \d+\.\d s\)$/m);
    expect(first.log.log_text).toMatch(/^\(npm ci: \d+\.\d s\)$/m);
    expect(first.log.log_text).toMatch(/^Build succeeded in \d+\.\d s$/m);
    firstId = installId(first.log.log_text)!;
    expect(firstId).toBeDefined();

    // A source change, the same lockfile: no install, and the deployed app runs on the saved one.
    repo.commit({ 'server.js': nodeFiles('1.0.0')['server.js'].replace("'install '", "'v2 install '") });
    const { image, deployment } = await chainDeploy(h, a);
    expect(deployment?.complete, JSON.stringify(deployment ?? image)).toBe(true);
    const second = (await h.app.inject({ method: 'GET', url: `/v1/images/${image.id}/log`, headers: a.user.headers })).json();
    expect(second.log_text).toContain('dependencies: reused (lockfile unchanged: package-lock.json)');
    expect(second.log_text).not.toContain('$ npm ci');
    expect(second.log_text).toContain('$ npm run build');
    const host = new URL(deployment.deploy_metadata.url).hostname;
    expect((await routerGet(localRuntime(h.ctx).router.port, host, '/', 30_000)).body).toBe(`v2 install ${firstId}`);

    // A changed lockfile installs again.
    repo.commit(nodeFiles('1.0.1'));
    const third = await buildAndWait(h, a);
    expect(third.log.error_detail).toBeNull();
    expect(third.log.log_text).toContain('$ npm ci');
    expect(third.log.log_text).toContain('dependencies: installed');
    expect(installId(third.log.log_text)).not.toBe(firstId);
  });

  it('a saved install that is gone or damaged falls back to a full install', async () => {
    rmSync(join(savedInstall(a), 'tree'), { recursive: true, force: true });
    const built = await buildAndWait(h, a);
    expect(built.log.error_detail).toBeNull();
    expect(built.log.log_text).toContain('dependencies: installing (no saved install');
    expect(built.log.log_text).toContain('$ npm ci');
    expect(built.log.log_text).toContain('dependencies: saved for the next build');
  });

  it("another application with the same lockfile installs its own and cannot read the first one's", async () => {
    const peek = join(savedInstall(a), 'key');
    const repo = new TestRepo();
    repos.push(repo);
    repo.commit(nodeFiles('1.0.1', peek));
    const b = await createApp(h, { github_repository: repo.dir });
    const built = await buildAndWait(h, b);
    expect(built.log.error_detail).toBeNull();
    expect(built.log.log_text).toContain('dependencies: installing (no saved install');
    expect(built.log.log_text).toMatch(/cannot read the other cache: (EACCES|ENOENT)/);
    expect(built.log.log_text).not.toMatch(/^read the other cache/m);
  });

  it('a Python virtualenv is reused too, and runs from the new build tree', async () => {
    const repo = new TestRepo();
    repos.push(repo);
    repo.commit({
      'requirements.txt': '# nothing to install\n',
      'server.py': pythonHttpApp('sys.prefix', 'import sys'),
      Procfile: 'web: python server.py\n',
    });
    const t = await createApp(h, {
      github_repository: repo.dir,
      auto_deploy_branch: 'main',
      health_check_path: '/',
      deployment_timeout: 60,
    });
    const first = await buildAndWait(h, t);
    expect(first.log.error_detail).toBeNull();
    expect(first.log.log_text).toContain('dependencies: installed');
    const { image, deployment } = await chainDeploy(h, t);
    expect(deployment?.complete, JSON.stringify(deployment ?? image)).toBe(true);
    const second = (await h.app.inject({ method: 'GET', url: `/v1/images/${image.id}/log`, headers: t.user.headers })).json();
    expect(second.log_text).toContain('dependencies: reused (lockfile unchanged: requirements.txt)');
    expect(second.log_text).not.toContain('-m venv');
    const host = new URL(deployment.deploy_metadata.url).hostname;
    const prefix = (await routerGet(localRuntime(h.ctx).router.port, host, '/', 30_000)).body;
    expect(prefix).toMatch(new RegExp(`/${image.version}/app/\\.venv$`));
  });
});
