import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../helpers/harness.js';
import { TestRepo } from '../helpers/git-repo.js';
import { buildAndWait, createApp, nodeApp } from './fixtures.js';

// A second Node installation, below /opt so sandboxed builds see it: the machine's own Node
// behind a name that reports another version, so choosing it is visible (nothing is downloaded).
const nodeDirs = mkdtempSync('/opt/slipway-test-nodes-');
const otherNode = join(nodeDirs, 'v99.1.0', 'bin');
let h: Harness;
const repos: TestRepo[] = [];
beforeAll(async () => {
  mkdirSync(otherNode, { recursive: true });
  writeFileSync(
    join(otherNode, 'node'),
    `#!/bin/sh\nif [ "$1" = --version ]; then echo v99.1.0; exit 0; fi\nexec ${process.execPath} "$@"\n`,
  );
  for (const dir of [nodeDirs, join(nodeDirs, 'v99.1.0'), otherNode]) chmodSync(dir, 0o755);
  chmodSync(join(otherNode, 'node'), 0o755);
  h = await createHarness({ BUILD_NODE_DIRS: nodeDirs }, { jobs: true });
});
afterAll(async () => {
  await h?.close();
  for (const r of repos) r.remove();
  rmSync(nodeDirs, { recursive: true, force: true });
});

/** The tiny Node app with `engines.node` set and a build step that prints which `node` PATH finds first. */
function appWithEngines(range: unknown) {
  const files = nodeApp();
  const pkg = JSON.parse(files['package.json']!);
  files['package.json'] = JSON.stringify({ ...pkg, engines: { node: range }, scripts: { ...pkg.scripts, build: 'node build.js' } });
  // npm puts the app's node_modules/.bin folders first; the installation's bin comes next.
  files['build.js'] = "console.log('node dir first on PATH: ' + process.env.PATH.split(':').find((d) => !d.includes('node_modules')));\n";
  const r = new TestRepo();
  repos.push(r);
  r.commit(files);
  return r;
}

describe('engines.node in package.json', () => {
  it('a range no installed Node satisfies fails before any build command, listing the versions here', async () => {
    const t = await createApp(h, { github_repository: appWithEngines('>=200').dir });
    const { log } = await buildAndWait(h, t);
    expect(log.status).toBe('error');
    expect(log.error_code).toBe('build_failed');
    expect(log.error_detail).toContain('package.json asks for Node ">=200"');
    // Only what is really installed: the PATH's Node and the one under BUILD_NODE_DIRS.
    expect(log.error_detail).toContain(`${process.versions.node} (`);
    expect(log.error_detail).toContain(`99.1.0 (${join(otherNode, 'node')})`);
    expect(log.error_detail).toContain(`${nodeDirs}/<version>/bin/node`);
    expect(log.log_text).not.toContain('$ npm ci');
  });

  it('a range only the other installation satisfies builds with it, and its processes run with it first on PATH', async () => {
    const t = await createApp(h, { github_repository: appWithEngines('>=99').dir });
    const { log, detail } = await buildAndWait(h, t);
    expect(log.error_detail).toBeNull();
    expect(log.log_text).toContain(`Using Node 99.1.0 (${join(otherNode, 'node')}): satisfies ">=99"`);
    expect(log.log_text).toContain(`node dir first on PATH: ${otherNode}`);
    expect(detail.image_metadata).toMatchObject({ node_version: '99.1.0' });
    expect(detail.processes.web.env.PATH).toMatch(new RegExp(`^${otherNode}:`));
  });

  it("the machine's own Node when it satisfies the range (or none is asked for); a malformed range is named", async () => {
    const major = process.versions.node.split('.')[0];
    const t = await createApp(h, { github_repository: appWithEngines(`${major}.x`).dir });
    const { log, detail } = await buildAndWait(h, t);
    expect(log.error_detail).toBeNull();
    expect(log.log_text).toContain(`Using Node ${process.versions.node} (`);
    expect(log.log_text).not.toContain(`node dir first on PATH: ${otherNode}`);
    expect(detail.processes.web.env).toEqual({});

    const bad = await createApp(h, { github_repository: appWithEngines({ min: 20 }).dir });
    const failed = await buildAndWait(h, bad);
    expect(failed.log.status).toBe('error');
    expect(failed.log.error_detail).toContain('"engines.node" must be a version range');
  });
});

describe('.python-version', () => {
  it('picks the installed Python it names, or fails listing those installed', async () => {
    const python = (await import('node:child_process')).execFileSync('python3', ['--version'], { encoding: 'utf8' });
    const version = /(\d+\.\d+)\.\d+/.exec(python)![1]!;
    const good = new TestRepo();
    const missing = new TestRepo();
    repos.push(good, missing);
    good.commit({ 'requirements.txt': '', '.python-version': `${version}\n`, Procfile: 'web: python -m http.server $PORT\n' });
    missing.commit({ 'requirements.txt': '', '.python-version': '2.6\n', Procfile: 'web: python -m http.server $PORT\n' });

    const built = await buildAndWait(h, await createApp(h, { github_repository: good.dir }));
    expect(built.log.error_detail).toBeNull();
    expect(built.log.log_text).toContain(`satisfies "${version}"`);
    expect(built.detail.image_metadata.python_version).toMatch(new RegExp(`^${version.replace('.', '\\.')}\\.`));

    const failed = await buildAndWait(h, await createApp(h, { github_repository: missing.dir }));
    expect(failed.log.status).toBe('error');
    expect(failed.log.error_detail).toContain('.python-version asks for Python 2.6 but this machine has Python 3.');
  });
});
