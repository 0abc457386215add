import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../helpers/harness.js';
import { TestRepo } from '../helpers/git-repo.js';
import { pythonHttpApp } from '../helpers/python-app.js';
import { routerGet } from '../helpers/router-get.js';
import { waitFor } from '../helpers/wait.js';
import { settled } from '../pipeline-deploy/fixtures.js';
import { buildAndWait, createApp, type TestApp } from './fixtures.js';

// Build detection beyond Node, through the real pipeline (build → release → deploy → the edge).
// Nothing is downloaded: the Python app has no third-party packages, the Go app no modules.
const GO = existsSync('/usr/bin/go') || existsSync('/usr/local/bin/go');
if (!GO) console.warn('[test/pipeline-build] skipping the Go app: no Go toolchain (apt-get install golang-go)');

let h: Harness;
const repos: TestRepo[] = [];

beforeAll(async () => {
  h = await createHarness(
    { ROUTER_HOST: '127.0.0.1', ROUTER_PORT: 0, RUNTIME_STOP_GRACE_MS: 1000, ROUTER_DRAIN_TIMEOUT_MS: 1000 },
    { jobs: true, runtime: true },
  );
});

afterAll(async () => {
  await h?.close();
  for (const r of repos) r.remove();
});

async function appFrom(files: Record<string, string>): Promise<TestApp> {
  const repo = new TestRepo();
  repos.push(repo);
  repo.commit(files);
  return createApp(h, { github_repository: repo.dir, auto_deploy_branch: 'main' });
}

/** Build, release and deploy in one request; the deployment settled, and what the edge serves. */
async function deployAndGet(t: TestApp) {
  const chain = await h.app.inject({ method: 'POST', url: `/v1/applications/${t.appId}/deploy`, headers: t.user.headers });
  expect(chain.statusCode, chain.body).toBe(202);
  const imageId = chain.json().image_id;
  const deployment = await waitFor(
    'the chain to reach a deployment, or its build to fail',
    async () => {
      const list = await h.app.inject({ method: 'GET', url: `/v1/applications/${t.appId}/deployments`, headers: t.user.headers });
      if (list.json().items?.[0]) return list.json().items[0];
      const image = await h.app.inject({ method: 'GET', url: `/v1/images/${imageId}/log`, headers: t.user.headers });
      return image.json().status === 'error' ? { failed: image.json() } : null;
    },
    120_000,
  );
  const log = (await h.app.inject({ method: 'GET', url: `/v1/images/${imageId}/log`, headers: t.user.headers })).json();
  expect(deployment.failed, log.log_text).toBeUndefined();
  const d = await settled(h, t.user, deployment.id, 60_000);
  expect(d.status, d.deploy_log).toBe('complete');
  const url = new URL(d.deploy_metadata.url);
  return { log: log.log_text as string, served: await routerGet(Number(url.port), url.hostname) };
}

describe('build detection beyond Node', () => {
  it('a Python app (pyproject.toml, .python-version, main.py, no Procfile) builds on the version asked for and serves', async () => {
    const t = await appFrom({
      'pyproject.toml': '[project]\nname = "hello"\nversion = "0.1.0"\ndependencies = []\n',
      '.python-version': '3\n',
      'main.py': pythonHttpApp("'hello from python ' + os.environ['VIRTUAL_ENV'].rsplit('/', 1)[1]"),
    });
    const { log, served } = await deployAndGet(t);
    const lines = log.split('\n');
    const builder = lines.findIndex((l) => l.startsWith('Builder: '));
    expect(lines[builder]).toBe('Builder: source (no Dockerfile: the language is detected from the files)');
    expect(lines[builder + 1]).toMatch(/^Detected: python: pyproject.toml is present; Python 3\.\d+\.\d+ \(.python-version asks for 3\)$/);
    expect(served).toEqual({ status: 200, body: 'hello from python .venv' });
  });

  it.skipIf(!GO)('a Go app (go.mod, no Procfile) builds with the local toolchain and serves', async () => {
    const t = await appFrom({
      'go.mod': 'module example.com/hello\n\ngo 1.19\n',
      // Plain `net` (not net/http): compiling crypto/tls with an empty build cache would take most of this test.
      'main.go': [
        'package main',
        'import ("bufio"; "net"; "os")',
        'func main() {',
        '  l, err := net.Listen("tcp", "127.0.0.1:"+os.Getenv("PORT"))',
        '  if err != nil { panic(err) }',
        '  for {',
        '    c, err := l.Accept()',
        '    if err != nil { continue }',
        '    go func(c net.Conn) {',
        '      defer c.Close()',
        '      r := bufio.NewReader(c)',
        '      for { line, err := r.ReadString(10); if err != nil || line == "\\r\\n" { break } }',
        '      c.Write([]byte("HTTP/1.1 200 OK\\r\\nContent-Length: 13\\r\\nConnection: close\\r\\n\\r\\nhello from go"))',
        '    }(c)',
        '  }',
        '}',
        '',
      ].join('\n'),
    });
    const { log, served } = await deployAndGet(t);
    expect(log).toMatch(/Detected: go: go.mod is present; Go 1\.\d+(\.\d+)? \(go.mod asks for 1\.19\)/);
    expect(log).toContain('$ go build -o .slipway/app .');
    expect(served).toEqual({ status: 200, body: 'hello from go' });
  });

  it("a static site (index.html only) is served as files; a build script's output directory too", async () => {
    const t = await appFrom({ 'index.html': '<h1>hello from a static site</h1>\n', 'about.txt': 'about' });
    const { log, served } = await deployAndGet(t);
    expect(log).toMatch(/Detected: static: index.html is present .*served as files by (busybox httpd|python http.server)/);
    expect(served).toEqual({ status: 200, body: '<h1>hello from a static site</h1>\n' });

    // A `build` script and no `start`: the build's output directory is what is served.
    const generated = await appFrom({
      'package.json': JSON.stringify({ name: 'site', scripts: { build: 'mkdir -p dist && echo built > dist/index.html' } }),
    });
    const built = await buildAndWait(h, generated);
    expect(built.log.status, built.log.log_text).toBe('built');
    expect(built.log.log_text).toMatch(/No start script: dist\/index.html, the build's output, is served as files by/);
    expect(built.detail.processes.web.cmd).toMatch(/ -h dist$| --directory dist \$PORT$/);
  });

  it('refuses runtime versions the machine does not have, naming the ones it has', async () => {
    const python = await appFrom({ 'requirements.txt': '', '.python-version': '2.7\n', 'main.py': 'print(1)\n' });
    const refused = await buildAndWait(h, python);
    expect(refused.log.status).toBe('error');
    expect(refused.log.error_detail).toMatch(/^\.python-version asks for Python 2\.7 but this machine has Python 3\.\d+\.\d+/);

    if (GO) {
      const go = await appFrom({ 'go.mod': 'module example.com/x\n\ngo 1.99\n', 'main.go': 'package main\nfunc main() {}\n' });
      const tooNew = await buildAndWait(h, go);
      expect(tooNew.log.error_detail).toMatch(/^go\.mod asks for Go 1\.99; this build machine has Go 1\.\d+/);
    }
  });
});
