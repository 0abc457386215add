/**
 * Issue 30's CLI proofs, the `slipway` executable as a child process against a real server
 * (listening, real PostgreSQL, pipeline and sandboxed local runtime), one deployed app shared:
 * `run` passes standard input and exit codes, gives a terminal when it runs on one (a real pty
 * through util-linux `script`), scrubs secrets from the attached stream; `status` of a serving app.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../helpers/harness.js';
import { TestRepo } from '../helpers/git-repo.js';
import { localRuntime } from '../helpers/local-runtime.js';
import { routerGet } from '../helpers/router-get.js';
import { waitFor } from '../helpers/wait.js';
import { BIN, slipway, type CliResult } from './slipway.js';

const SECRET = 'sk-live-first-hour-5c1e90aa';

let h: Harness;
let repo: TestRepo;
let home: string;
let env: Record<string, string>;

function cli(args: string[], options: { input?: string; cwd?: string } = {}): Promise<CliResult> {
  return slipway(args, env, { cwd: options.cwd ?? repo.dir, input: options.input });
}

function expectOk(r: CliResult) {
  expect(r.code, `stdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(0);
  return r;
}

beforeAll(async () => {
  h = await createHarness(
    { ROUTER_HOST: '127.0.0.1', ROUTER_PORT: 0, RUNTIME_STOP_GRACE_MS: 2000, ROUTER_DRAIN_TIMEOUT_MS: 2000 },
    { jobs: true, runtime: true },
  );
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  const address = h.app.server.address();
  if (!address || typeof address === 'string') throw new Error('no port');
  const user = await h.user();
  home = mkdtempSync(join(tmpdir(), 'slipway-first-hour-'));
  env = { HOME: home, XDG_CONFIG_HOME: join(home, '.config'), SLIPWAY_SERVER: `http://127.0.0.1:${address.port}` };
  repo = new TestRepo();
  repo.commit({
    'server.js': `require('http').createServer((q, s) => s.end('up')).listen(Number(process.env.PORT), '127.0.0.1');\n`,
    Procfile: 'web: node server.js\nworker: node -e "setInterval(() => {}, 1000)"\n',
  });
  expectOk(await cli(['login', '--email', user.email, '--password-stdin'], { input: `${user.password}\n` }));
  expectOk(await cli(['orgs', 'create', 'Hour']));
  expectOk(await cli(['projects', 'create', 'Shop', '--org', 'hour']));
  expectOk(await cli(['apps', 'create', 'Web', '--project', 'hour/shop', '--repo', repo.dir, '--branch', 'main', '--link']));
  expectOk(await cli(['config', 'set', `API_TOKEN=${SECRET}`, '--secret']));
  expectOk(await cli(['deploy', '--wait']));
}, 180_000);

afterAll(async () => {
  await h?.close();
  repo?.remove();
  if (home) rmSync(home, { recursive: true, force: true });
});

describe('slipway run, attached', () => {
  it('passes standard input through and ends with the command', async () => {
    const echoed = expectOk(await cli(['run', 'cat'], { input: 'hello from stdin\nsecond line\n' }));
    expect(echoed.stdout).toBe('hello from stdin\nsecond line\n');
    // More than any buffer along the way holds: it flows at the pace the command reads.
    const big = 'x'.repeat(1024 * 1024 * 3);
    const counted = expectOk(await cli(['run', '--', 'wc', '-c'], { input: big }));
    expect(counted.stdout.trim()).toBe(String(big.length));
  });

  it('exits with the exit code of the command; stderr stays stderr', async () => {
    const seven = await cli(['run', '--', 'sh', '-c', 'read line; echo "got $line"; echo oops >&2; exit 7'], { input: 'abc\n' });
    expect(seven.code, seven.stderr).toBe(7);
    expect(seven.stdout).toBe('got abc\n');
    expect(seven.stderr).toBe('oops\n');
    // Recorded as a one-off run, with its exit code.
    const recorded = await h.ctx.db.selectFrom('one_off_runs').selectAll().where('exit_code', '=', 7).executeTakeFirstOrThrow();
    expect(recorded).toMatchObject({ status: 'failed', command: expect.stringContaining('exit 7') });
    const missing = await cli(['run', 'no-such-command-here']);
    expect(missing.code).toBe(127);
    expect(missing.stderr).toMatch(/not found/);
  });

  it('hides secret values in the attached output, also when split across writes', async () => {
    const r = expectOk(
      await cli(['run', '--', 'sh', '-c', 'printf %s "$API_TOKEN" | head -c 9; sleep 0.2; printf "%s\\n" "${API_TOKEN#?????????}"']),
    );
    expect(r.stdout).toBe('**secret**\n');
    expect(r.stdout + r.stderr).not.toContain(SECRET.slice(9));
    // --raw keeps bytes the terminal-safe output would drop.
    const raw = expectOk(await cli(['run', '--raw', '--', 'printf', 'a\\033b\\r\\n']));
    expect(raw.stdout).toBe('a\u001bb\r\n');
  });

  it.skipIf(!existsSync('/usr/bin/script'))('gives an interactive command a terminal when it runs on one', async () => {
    const child = spawn('script', ['-qfec', `${process.execPath} ${BIN} run sh`, '/dev/null'], {
      cwd: repo.dir,
      env: { ...env, PATH: process.env.PATH ?? '', SLIPWAY_CLI_SOURCE: '1', TERM: 'xterm' },
    });
    let screen = '';
    child.stdout.on('data', (c) => {
      screen += c;
    });
    const exited = new Promise<number>((r) => child.on('close', (code) => r(code ?? 1)));
    child.stdin.write('tty; echo "term=$TERM product=$((6*7))"\r');
    await waitFor('the shell to answer', async () => /product=42/.test(screen), 30_000);
    expect(screen).toMatch(/\/dev\/pts\/\d+/);
    expect(screen).toContain('term=xterm');
    child.stdin.write('exit 5\r');
    expect(await exited, screen).toBe(5);
  });
});

describe('slipway status and apps settings', () => {
  it('status of a serving app shows what serves, its URL and every process type, with a hint for one at 0', async () => {
    const status = expectOk(await cli(['status'])).stdout;
    expect(status).toMatch(/Serving\s+release v1 on image v1 \(commit [0-9a-f]{7}\)/);
    expect(status).toMatch(/URL\s+http:\/\/web\.shop\.hour\.localhost/);
    expect(status).toMatch(/Processes\s+web: 1\/1 up \(healthy\)/);
    expect(status).toContain('worker: 0 (scaled to 0; start it: slipway scale worker=1)');
    expect(status).not.toMatch(/^(URL|Processes)\s+-$/m);
    const json = JSON.parse(expectOk(await cli(['status', '--json'])).stdout);
    expect(json.url).toMatch(/^http:\/\/web\.shop\.hour\.localhost/); // The release log in its own words: no build headings, every process type and the way to start one at 0.
    const releaseLog = expectOk(await cli(['releases', 'log', 'v1'])).stdout;
    expect(releaseLog).toContain('----- Image and configuration');
    expect(releaseLog).toContain('Processes: web=1 (default) worker=0 (default); at 0, start with: slipway scale worker=1');
    expect(releaseLog).not.toMatch(/----- (Build|Push)\b/);
  });

  it('apps update changes settings, apps rename the name; nothing to change is a usage error', async () => {
    const updated = expectOk(
      await cli(['apps', 'update', '--health-check-path', '/healthz', '--deployment-timeout', '60', '--stability-window', '0']),
    );
    expect(updated.stdout).toMatch(/Health check\s+\/healthz/);
    expect(updated.stdout).toMatch(/Deploy timeout\s+60s/);
    expect(updated.stdout).toMatch(/Stability\s+0s/);
    expect(updated.stdout).toMatch(/Health timeout\s+platform default/);
    const timeouts = expectOk(await cli(['apps', 'update', '--health-check-timeout', '30', '--stability-window', 'default']));
    expect(timeouts.stdout).toMatch(/Health timeout\s+30s/);
    expect(timeouts.stdout).toMatch(/Stability\s+platform default/);
    expect((await cli(['apps', 'update', '--stability-window', '-1'])).stderr).toMatch(/--stability-window must be a whole number/);
    const renamed = expectOk(await cli(['apps', 'rename', 'Storefront']));
    expect(renamed.stdout).toContain("Renamed hour/shop/web from 'Web' to 'Storefront'");
    const app = JSON.parse(expectOk(await cli(['apps', 'get', '--json'])).stdout);
    expect(app).toMatchObject({
      name: 'Storefront',
      slug: 'web',
      health_check_path: '/healthz',
      deployment_timeout: 60,
      health_check_timeout: 30,
      stability_window: null,
    });
    const nothing = await cli(['apps', 'update']);
    expect(nothing.code).toBe(2);
    expect(nothing.stderr).toMatch(/Nothing to change/);
  });
});

describe('deploy from a local directory', () => {
  it('says which changes are not committed (and how to include them); a directory without git gets the commands to make it a repository', async () => {
    writeFileSync(
      join(repo.dir, 'server.js'),
      `require('http').createServer((q, s) => s.end('uncommitted')).listen(Number(process.env.PORT), '127.0.0.1');\n`,
    );
    // An unknown environment fails after the check: the warning without a deployment.
    const warned = await cli(['deploy', '--env', 'nowhere']);
    expect(warned.stderr).toMatch(/warning: 1 change in .* is not committed and will not be deployed/);
    expect(warned.stderr).toContain('M server.js');
    expect(warned.stderr).toContain('slipway deploy --include-uncommitted');

    const plain = mkdtempSync(join(tmpdir(), 'slipway-plain-'));
    writeFileSync(join(plain, 'server.js'), 'console.log(1)\n');
    expectOk(await cli(['apps', 'create', 'Plain', '--project', 'hour/shop', '--repo', plain, '--branch', 'main']));
    const refused = await cli(['deploy', '--app', 'hour/shop/plain']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`${plain} is not a git repository`);
    expect(refused.stderr).toContain(`git -C ${plain} init -b main`);
    rmSync(plain, { recursive: true, force: true });
  });

  it('deploy --include-uncommitted serves the working tree as it is, leaving the branch and index alone', async () => {
    const head = repo.git('rev-parse', 'HEAD');
    expectOk(await cli(['deploy', '--include-uncommitted', '--wait']));
    expect((await routerGet(localRuntime(h.ctx).router.port, 'web.shop.hour.localhost', '/')).body).toBe('uncommitted');
    expect(repo.git('rev-parse', 'HEAD')).toBe(head);
    expect(repo.git('status', '--porcelain')).toContain('M server.js');
  });
});

describe('slipway doctor', () => {
  it('checks the server and the application here, and says what to fix', async () => {
    // The working tree still has the change deployed with --include-uncommitted above.
    const here = await cli(['doctor']);
    expect(here.code, here.stdout + here.stderr).toBe(1);
    expect(here.stdout).toMatch(/✓ server: http:\/\/127\.0\.0\.1:\d+ answers/);
    expect(here.stdout).toMatch(/✓ database: ok/);
    expect(here.stdout).toMatch(/✓ login: the stored API key works/);
    expect(here.stdout).toMatch(/✓ application: hour\/shop\/web \(linked\)/);
    expect(here.stdout).toMatch(/✗ git: 1 change\(s\) not committed .*slipway deploy --include-uncommitted/);
    expect(here.stdout).toMatch(/✓ start command: Procfile web: node server\.js/);
    expect(here.stdout).toMatch(/✓ port: server\.js listens on PORT/);
    // The server's own checks of its machine, in words a member may read (no paths or kernel errors).
    expect(here.stdout).toMatch(/✓ sandbox: bubblewrap starts sandboxes here\n/);
    expect(here.stdout).toMatch(/✓ cgroups: cgroup v[12]/);
    expect(here.stdout).toMatch(/✓ buildah: Dockerfile builds work\n/);
    expect(here.stdout).toMatch(/✓ registry: none configured: images stay on this machine/);
    expect(here.stdout).toMatch(/✓ edge: the router serves applications on port \d+\n/);
    expect(here.stdout).toContain(`✓ node: source builds offer Node ${process.versions.node}`);

    // A site administrator also sees what the machine answered; a member never does.
    const admin = await h.user({ admin: true });
    const member = await h.user();
    const asAdmin = await h.app.inject({ method: 'GET', url: '/v1/integrations/doctor', headers: admin.headers });
    const asMember = await h.app.inject({ method: 'GET', url: '/v1/integrations/doctor', headers: member.headers });
    expect(asAdmin.json().checks.find((c: { name: string }) => c.name === 'buildah').detail).toMatch(/buildah version/);
    expect(asMember.json().checks.every((c: { detail: unknown }) => c.detail === null)).toBe(true);
    expect(asMember.json().node_versions).toContain(process.versions.node);
    expect((await h.app.inject({ method: 'GET', url: '/v1/integrations/doctor' })).statusCode).toBe(401);

    const plain = mkdtempSync(join(tmpdir(), 'slipway-doctor-'));
    writeFileSync(join(plain, 'package.json'), JSON.stringify({ main: 'index.js', engines: { node: '>=22' } }));
    writeFileSync(join(plain, 'index.js'), "require('http').createServer().listen(3000);\n");
    const elsewhere = await cli(['doctor'], { cwd: plain });
    rmSync(plain, { recursive: true, force: true });
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.stdout).toMatch(/✗ application: none linked here: slipway apps link/);
    expect(elsewhere.stdout).toMatch(/✗ git: .* is not a git repository: git init -b main/);
    expect(elsewhere.stdout).toMatch(/✗ start command: nothing says how to start it: add a Procfile/);
    expect(elsewhere.stdout).toMatch(/✗ port: index\.js does not read PORT/);
    // engines.node is checked against the Node versions the server's builds really have.
    expect(elsewhere.stdout).toContain(`✗ engines.node: ">=22" matches no Node on the server (${process.versions.node})`);
  });
});

describe('slipway launch', () => {
  it('detects the application here, creates it in your only project, links and deploys it in one step', async () => {
    const fresh = new TestRepo();
    try {
      fresh.commit({
        'server.js': `require('http').createServer((q, s) => s.end('launched')).listen(Number(process.env.PORT), '127.0.0.1');\n`,
        Procfile: 'web: node server.js\n',
      });
      const launched = expectOk(await cli(['launch', '--name', 'Launched'], { cwd: fresh.dir }));
      expect(launched.stderr).toContain('Detected an application (web: node server.js). Creating Launched in hour/shop');
      expect(launched.stdout).toMatch(/Launched hour\/shop\/launched: http:\/\/launched\.shop\.hour\.localhost/);
      expect((await routerGet(localRuntime(h.ctx).router.port, 'launched.shop.hour.localhost', '/')).body).toBe('launched');
      const again = await cli(['launch'], { cwd: fresh.dir });
      expect(again.code).toBe(1);
      expect(again.stderr).toContain('already linked to hour/shop/launched: deploy it with slipway deploy --wait');
    } finally {
      fresh.remove();
    }
  });
});
