import { randomUUID } from 'node:crypto';
/**
 * Issue 12's proof: the `slipway` executable, run as a child process against a real server
 * (listening on a port, real PostgreSQL, real pipeline and runtime): login, resources,
 * configuration with a secret that never shows, deploy --wait (success exits 0, a failing
 * build exits 1 with the reason), logs --follow, run, rollback, --json, exit codes, NO_COLOR.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { TestRepo } from '../helpers/git-repo.js';
import { localRuntime } from '../helpers/local-runtime.js';
import { routerGet } from '../helpers/router-get.js';
import { waitFor } from '../helpers/wait.js';
import { BIN, slipway, slipwayLive, type CliResult } from './slipway.js';

const SECRET = 'sk-live-cli-9d41c07e55';
/** The escape character every ANSI colour code starts with. */
const ESC = String.fromCharCode(27);

/** A node web app answering `<version>:<GREETING>`; `/say/<word>` prints `said <word>`. */
const server = (version: string) => `
const http = require('http');
console.log('boot ${version}');
http.createServer((req, res) => {
  if (req.url.startsWith('/say/')) console.log('said ' + req.url.slice(5));
  if (req.url === '/hostile') console.log('title \\x1b]0;pwned\\x07 clear \\x1b[2J\\x1b[H back\\rover \\u009b7m \\u202eevil\\u202c\\u200b hostile-escapes');
  res.end('${version}:' + process.env.GREETING);
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

let h: Harness;
let user: TestUser;
let repo: TestRepo;
let brokenRepo: TestRepo;
let firstCommit: string;
let home: string;
let workdir: string;
let env: Record<string, string>;
/** Every output of every command, to prove the secret never appears. */
const transcript: string[] = [];

async function cli(args: string[], options: { input?: string; env?: Record<string, string>; cwd?: string } = {}): Promise<CliResult> {
  const r = await slipway(args, { ...env, ...options.env }, { cwd: options.cwd ?? workdir, input: options.input });
  transcript.push(r.stdout, r.stderr);
  return r;
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
  user = await h.user();
  home = mkdtempSync(join(tmpdir(), 'slipway-cli-home-'));
  workdir = mkdtempSync(join(tmpdir(), 'slipway-cli-work-'));
  env = { HOME: home, XDG_CONFIG_HOME: join(home, '.config'), SLIPWAY_SERVER: `http://127.0.0.1:${address.port}` };
  repo = new TestRepo();
  firstCommit = repo.commit({
    'server.js': server('v1'),
    Procfile: 'web: node server.js\n',
    'slipway.json': JSON.stringify({ build: 'echo compiling v1' }),
  });
  brokenRepo = new TestRepo();
  brokenRepo.commit({
    'server.js': server('x'),
    Procfile: 'web: node server.js\n',
    'slipway.json': JSON.stringify({ build: 'echo about to fail; exit 3' }),
  });
});

afterAll(async () => {
  await h?.close();
  repo?.remove();
  brokenRepo?.remove();
  if (home) rmSync(home, { recursive: true, force: true });
  if (workdir) rmSync(workdir, { recursive: true, force: true });
});

const routerHost = (app = 'web') => `${app}.shop.cli-org.localhost`;
const viaRouter = (path = '/', app = 'web') => routerGet(localRuntime(h.ctx).router.port, routerHost(app), path);

describe('slipway CLI against a running server', () => {
  it('login with e-mail and password stores a new API key (mode 0600, never the password); whoami reads it', async () => {
    const login = expectOk(await cli(['login', '--email', user.email, '--password-stdin'], { input: `${user.password}\n` }));
    expect(login.stdout).toContain(`as ${user.username}`);
    const file = join(home, '.config', 'slipway', 'config.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const stored = readFileSync(file, 'utf8');
    expect(stored).not.toContain(user.password);
    expect(JSON.parse(stored)).toMatchObject({ api_key: expect.stringMatching(/.{20,}/), server: env.SLIPWAY_SERVER });

    const who = expectOk(await cli(['whoami']));
    expect(who.stdout).toContain(`${user.username} <${user.email}>`);
    const whoJson = JSON.parse(expectOk(await cli(['whoami', '--json'])).stdout);
    expect(whoJson).toMatchObject({ username: user.username, email: user.email });

    const wrongPassword = await cli(['login', '--email', user.email, '--password-stdin'], { input: 'not-the-password\n' });
    expect(wrongPassword.code).toBe(4);
    expect(wrongPassword.stderr).toMatch(/Login failed/);
  });

  it.skipIf(!existsSync('/usr/bin/script'))(
    'login on a terminal prompts for the password without echoing it (needs util-linux `script` for a pty)',
    async () => {
      const configHome = join(home, 'tty-config');
      const command = `${process.execPath} ${BIN} login --email ${user.email}`;
      const child = spawn('script', ['-qfec', command, '/dev/null'], {
        cwd: workdir,
        env: { ...env, SLIPWAY_CLI_SOURCE: '1', XDG_CONFIG_HOME: configHome, TERM: 'dumb' },
      });
      let screen = '';
      child.stdout.on('data', (c) => {
        screen += c;
      });
      const exited = new Promise<number>((r) => child.on('close', (code) => r(code ?? 1)));
      await waitFor('the password prompt', async () => screen.includes('Password'), 30_000);
      child.stdin.write(`${user.password}\r`);
      expect(await exited, screen).toBe(0);
      transcript.push(screen);
      expect(screen).toContain(`as ${user.username}`);
      expect(screen).not.toContain(user.password);
      expect(readFileSync(join(configHome, 'slipway', 'config.json'), 'utf8')).not.toContain(user.password);
    },
  );

  it('a wrong API key exits 4 with a message naming where the key came from', async () => {
    const flag = await cli(['whoami', '--api-key', 'sk-not-a-real-key']);
    expect(flag.code).toBe(4);
    expect(flag.stderr).toMatch(/The API key \(from the flag\) was rejected by http:\/\/127\.0\.0\.1:\d+/);
    const fromEnv = await cli(['orgs', 'list'], { env: { SLIPWAY_API_KEY: 'sk-not-a-real-key' } });
    expect(fromEnv.code).toBe(4);
    expect(fromEnv.stderr).toMatch(/from the environment/);
    // No key anywhere: says how to log in, before any request.
    const none = await cli(['whoami'], { env: { XDG_CONFIG_HOME: join(home, 'empty') } });
    expect(none.code).toBe(4);
    expect(none.stderr).toMatch(/Not logged in: run `slipway login`/);
  });

  it('usage errors exit 2, unknown resources 3; help works everywhere', async () => {
    expect((await cli(['deploy', '--no-such-flag'])).code).toBe(2);
    expect((await cli(['nonsense'])).code).toBe(2);
    expect((await cli(['scale', 'web=three', '--app', 'a/b/c'])).code).toBe(2);
    const missing = await cli(['apps', 'get', 'nobody/none/nothing']);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toMatch(/not found/);
    const help = expectOk(await cli(['help', 'config', 'set']));
    expect(help.stdout).toMatch(/Usage: slipway config set \[options\] <KEY=value\.\.\.>/);
    expect(expectOk(await cli(['deploy', '--help'])).stdout).toMatch(/--wait/);
  });

  it('creates an organization, a project and an application, and links the directory to it', async () => {
    expectOk(await cli(['orgs', 'create', 'CLI Org']));
    expectOk(await cli(['projects', 'create', 'Shop', '--org', 'cli-org']));
    const created = expectOk(
      await cli(['apps', 'create', 'Web', '--project', 'cli-org/shop', '--repo', repo.dir, '--branch', 'main', '--link']),
    );
    expect(created.stdout).toMatch(/Created application cli-org\/shop\/web .*linked/);
    const app = JSON.parse(expectOk(await cli(['apps', 'get', '--json'])).stdout);
    expect(app).toMatchObject({ slug: 'web', organization_slug: 'cli-org', project_slug: 'shop', github_repository: repo.dir });
    expectOk(await cli(['apps', 'create', 'Broken', '--project', 'cli-org/shop', '--repo', brokenRepo.dir, '--branch', 'main']));
    const list = expectOk(await cli(['apps', 'list']));
    expect(list.stdout).toMatch(/cli-org\/shop\/web/);
    expect(list.stdout).toMatch(/cli-org\/shop\/broken/);
  });

  it('apps list follows the pages of a project with more than 100 applications', async () => {
    expectOk(await cli(['projects', 'create', 'Many', '--org', 'cli-org']));
    const project = await h.ctx.db.selectFrom('projects').select('id').where('slug', '=', 'many').executeTakeFirstOrThrow();
    await h.ctx.db
      .insertInto('applications')
      .values(Array.from({ length: 130 }, (_, i) => ({ id: randomUUID(), project_id: project.id, name: `a${i}`, slug: `a${i}` })))
      .execute();
    const listed = JSON.parse(expectOk(await cli(['apps', 'list', '--project', 'cli-org/many', '--json'])).stdout) as Array<{
      slug: string;
    }>;
    expect(listed).toHaveLength(130);
    expect(new Set(listed.map((a) => a.slug)).size).toBe(130);
  });

  it('imports a dotenv file with a secret that never appears in any output', async () => {
    writeFileSync(join(workdir, '.env'), '# plain\nGREETING=hello\nLOG_LEVEL=info\n');
    writeFileSync(join(workdir, 'secrets.env'), `API_TOKEN=${SECRET}\n`);
    const plain = expectOk(await cli(['config', 'import', '.env']));
    expect(plain.stdout).toMatch(/GREETING\s+created/);
    const secret = expectOk(await cli(['config', 'import', 'secrets.env', '--secret']));
    expect(secret.stdout).toMatch(/API_TOKEN\s+created/);
    const list = expectOk(await cli(['config', 'list']));
    expect(list.stdout).toMatch(/API_TOKEN\s+\*\*secret\*\*\s+yes/);
    expect(list.stdout).toMatch(/GREETING\s+hello/);
    const json = JSON.parse(expectOk(await cli(['config', 'list', '--json'])).stdout);
    expect(json.find((v: { name: string }) => v.name === 'API_TOKEN')).toMatchObject({ secret: true, value: '**secret**' });
    // set / unset, and a project-level variable (another of the five layers)
    expectOk(await cli(['config', 'set', 'LOG_LEVEL=debug', 'EXTRA=1']));
    expectOk(await cli(['config', 'unset', 'EXTRA']));
    expectOk(await cli(['config', 'set', 'REGION=eu', '--scope', 'project']));
    expect(expectOk(await cli(['config', 'list', '--scope', 'project'])).stdout).toMatch(/REGION\s+eu/);
    expect((await cli(['config', 'unset', 'NOPE'])).code).toBe(3);
    // The other layers take entries parsed on the client: the workspace layer, with a bad line reported.
    writeFileSync(join(workdir, 'shared.env'), `SHARED_TOKEN=${SECRET}\nnot a variable line\n`);
    const shared = await cli(['config', 'import', 'shared.env', '--secret', '--scope', 'workspace']);
    expect(shared.code).toBe(1);
    expect(shared.stdout).toMatch(/SHARED_TOKEN\s+created/);
    expect(shared.stderr).toMatch(/1 of 2 variables were not imported/);
    expect(shared.stdout).toMatch(/line 2: expected NAME=value/);
    expect(expectOk(await cli(['config', 'list', '--scope', 'workspace'])).stdout).toMatch(/SHARED_TOKEN\s+\*\*secret\*\*\s+yes/);
    // It reached the server sealed.
    const row = await h.ctx.db
      .selectFrom('config_vars')
      .select(['secret', 'value', 'value_sealed'])
      .where('name', '=', 'API_TOKEN')
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ secret: true, value: null, value_sealed: expect.any(String) });
    expect(row.value_sealed).not.toContain(SECRET);
  });

  it('deploy --wait follows build, release and deploy and exits 0 once serving', async () => {
    const r = expectOk(await cli(['deploy', '--wait']));
    expect(r.stdout).toMatch(
      /==> Build[\s\S]*compiling v1[\s\S]*==> Release[\s\S]*==> Deploy[\s\S]*Deployed cli-org\/shop\/web to production/,
    );
    expect((await viaRouter()).body).toBe('v1:hello');
    // Followed live over the server's event streams, not by polling.
    expect(h.logs()).toMatch(/\/v1\/images\/[0-9a-f-]+\/log\/stream/);
    expect(h.logs()).toMatch(/\/v1\/deployments\/[0-9a-f-]+\/log\/stream/);
    const status = expectOk(await cli(['status']));
    expect(status.stdout).toMatch(/Latest deploy\s+release v1 complete/);
    expect(status.stdout).toContain(`http://${routerHost()}`);
  });

  it('deploy --wait of an application whose build fails exits 1 with the reason', async () => {
    const r = await cli(['deploy', '--wait', '--app', 'cli-org/shop/broken']);
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).toContain('about to fail');
    expect(r.stderr).toMatch(/Deploy failed: build failed: .*(exit|status|code).*3/i);
  });

  it('--json output parses for every list command', async () => {
    const lists = [
      ['orgs', 'list'],
      ['projects', 'list'],
      ['apps', 'list'],
      ['envs', 'list'],
      ['config', 'list'],
      ['api-keys', 'list'],
      ['builds', 'list'],
      ['releases', 'list'],
      ['deployments', 'list'],
    ];
    for (const args of lists) {
      const r = expectOk(await cli([...args, '--json']));
      const parsed = JSON.parse(r.stdout);
      expect(Array.isArray(parsed) ? parsed : parsed.items, args.join(' ')).toBeInstanceOf(Array);
      expect(parsed.length, `${args.join(' ')} is empty`).toBeGreaterThan(0);
    }
    const logs = expectOk(await cli(['logs', '--json']));
    for (const line of logs.stdout.trim().split('\n')) expect(JSON.parse(line)).toHaveProperty('line');
  });

  it('logs --follow prints a line the app writes after the command started', async () => {
    const follow = slipwayLive(['logs', '--follow'], env, { cwd: workdir });
    try {
      await follow.waitFor('boot v1');
      // Only now does the app print the marker.
      await waitFor('a request through the router', async () => (await viaRouter('/say/marker-4711')).status === 200);
      await follow.waitFor('said marker-4711');
      expect(follow.output().stdout).toMatch(/web\.\w+ said marker-4711/);
    } finally {
      // Ctrl-C ends following quietly.
      expect(await follow.stop()).toBe(0);
    }
    // Searching the stored lines: only the matching one, of the web process, in the window.
    const found = expectOk(await cli(['logs', '--search', 'marker-4711', '--process', 'web', '--since', '10m']));
    expect(found.stdout.trim().split('\n')).toHaveLength(1);
    expect(found.stdout).toContain('said marker-4711');
    expect(expectOk(await cli(['logs', '--process', 'worker'])).stdout).toBe('');
  });

  it('run -- <command> streams its output and exits with its exit code', async () => {
    const seven = await cli(['run', '--', 'sh', '-c', 'echo running one-off; exit 7']);
    expect(seven.code, seven.stderr).toBe(7);
    expect(seven.stdout).toContain('running one-off');
    const zero = expectOk(await cli(['run', '--', 'sh', '-c', 'echo "greeting=$GREETING"']));
    expect(zero.stdout).toContain('greeting=hello');
  });

  it('strips terminal escape sequences and control characters from logs and run output; --json keeps them escaped', async () => {
    // eslint-disable-next-line no-control-regex -- the control characters are what must not appear
    const controls = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069]/;
    await waitFor('a request through the router', async () => (await viaRouter('/hostile')).status === 200);
    const shown = await waitFor('the hostile line in the log', async () => {
      const r = expectOk(await cli(['logs', '--search', 'hostile-escapes']));
      return r.stdout.includes('hostile-escapes') ? r.stdout : null;
    });
    // Bidirectional overrides and zero-width characters too: they reorder or hide what is shown.
    expect(shown).toContain('title  clear  backover 7m evil hostile-escapes');
    expect(shown).not.toMatch(controls);
    // Scripts get the line as it was written, escaped by JSON.
    const json = expectOk(await cli(['logs', '--json', '--search', 'hostile-escapes']));
    expect(json.stdout).not.toMatch(controls);
    expect(JSON.parse(json.stdout.trim().split('\n')[0]!).line).toContain(`${ESC}]0;pwned\u0007`);
    // A one-off command's output, streamed.
    const run = expectOk(await cli(['run', '--', 'sh', '-c', "printf 'run \\033]0;pwned\\007 \\033[2J done\\n'"]));
    expect(run.stdout).toContain('run   done');
    expect(run.stdout).not.toMatch(controls);
  });

  it('rollback brings back the previous version', async () => {
    repo.commit({ 'server.js': server('v2'), 'slipway.json': JSON.stringify({ build: 'echo compiling v2' }) });
    expectOk(await cli(['deploy', '--wait']));
    expect((await viaRouter()).body).toBe('v2:hello');
    const back = expectOk(await cli(['rollback', '--wait']));
    expect(back.stdout).toMatch(/Rolled cli-org\/shop\/web back to v1/);
    await waitFor('v1 served again', async () => (await viaRouter()).body === 'v1:hello', 30_000);
  });

  it('scale, builds/releases/deployments get and log', async () => {
    const scaled = expectOk(await cli(['scale', 'web=2']));
    expect(scaled.stdout).toMatch(/web=2/);
    expect(expectOk(await cli(['builds', 'log', 'v1'])).stdout).toContain('compiling v1');
    expect(expectOk(await cli(['releases', 'get', 'v1'])).stdout).toMatch(/API_TOKEN/);
    const deployments = JSON.parse(expectOk(await cli(['deployments', 'list', '--json'])).stdout);
    const id = deployments.at(-1).id;
    expect(expectOk(await cli(['deployments', 'get', id])).stdout).toMatch(/complete/);
    const followed = expectOk(await cli(['deployments', 'log', id, '--follow']));
    expect(followed.stdout.length).toBeGreaterThan(0);
    expect(expectOk(await cli(['open', '--print'])).stdout.trim()).toMatch(
      new RegExp(`^http://${routerHost().replace(/\./g, '\\.')}:\\d+`),
    );
  });

  it('settings: flags win over the environment, which wins over the config file', async () => {
    const file = join(home, '.config', 'slipway', 'config.json');
    const stored = JSON.parse(readFileSync(file, 'utf8'));
    // The file names a server nobody listens on; the environment's wins.
    writeFileSync(file, JSON.stringify({ ...stored, server: 'http://127.0.0.1:9' }));
    try {
      expectOk(await cli(['whoami']));
      const { SLIPWAY_SERVER: _unused, ...withoutServer } = env;
      const fromFile = await slipway(['whoami'], withoutServer, { cwd: workdir });
      expect(fromFile.code).toBe(1);
      expect(fromFile.stderr).toMatch(/Cannot reach the Slipway server at http:\/\/127\.0\.0\.1:9/);
      const flag = await cli(['whoami', '--server', 'http://127.0.0.1:9']);
      expect(flag.stderr).toMatch(/Cannot reach the Slipway server at http:\/\/127\.0\.0\.1:9/);
    } finally {
      writeFileSync(file, JSON.stringify(stored));
    }
  });

  it('promote ships what staging runs to production without rebuilding', async () => {
    expectOk(await cli(['envs', 'create', 'Staging', '--type', 'staging']));
    repo.commit({ 'server.js': server('v3'), 'slipway.json': JSON.stringify({ build: 'echo compiling v3' }) });
    const staged = expectOk(await cli(['deploy', '--env', 'staging', '--wait']));
    expect(staged.stdout).toMatch(/Deployed cli-org\/shop\/web to staging/);
    const stagingBody = (await routerGet(localRuntime(h.ctx).router.port, 'web.staging.shop.cli-org.localhost', '/')).body;
    expect(stagingBody).toBe('v3:hello');
    expect((await viaRouter()).body).not.toBe('v3:hello');
    const builds = JSON.parse(expectOk(await cli(['builds', 'list', '--json'])).stdout).length;
    const promoted = expectOk(await cli(['promote', '--from', 'staging', '--to', 'production', '--wait']));
    expect(promoted.stdout).toMatch(/Promoted cli-org\/shop\/web from staging to production/);
    await waitFor('production serving the staging release', async () => (await viaRouter()).body === stagingBody, 30_000);
    expect(JSON.parse(expectOk(await cli(['builds', 'list', '--json'])).stdout).length).toBe(builds);
  });

  it('deploy --ref builds that commit; an unknown ref fails with the reason', async () => {
    const r = expectOk(await cli(['deploy', '--ref', firstCommit, '--wait']));
    expect(r.stdout).toContain(`Commit ${firstCommit}`);
    expect((await viaRouter()).body).toBe('v1:hello');
    const unknown = await cli(['deploy', '--ref', 'no-such-branch', '--wait']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/Deploy failed: build failed: .*no-such-branch/);
  });

  it('NO_COLOR output has no escape codes (and FORCE_COLOR output has them)', async () => {
    const forced = expectOk(await cli(['config', 'list'], { env: { FORCE_COLOR: '1' } }));
    expect(forced.stdout).toContain(`${ESC}[`);
    for (const args of [['config', 'list'], ['status'], ['deployments', 'list'], ['whoami']]) {
      const r = expectOk(await cli(args, { env: { FORCE_COLOR: '1', NO_COLOR: '1' } }));
      expect(r.stdout + r.stderr, args.join(' ')).not.toContain(ESC);
    }
    const failed = await cli(['deploy', '--wait', '--app', 'cli-org/shop/broken'], { env: { NO_COLOR: '1' } });
    expect(failed.code).toBe(1);
    expect(failed.stdout + failed.stderr).not.toContain(ESC);
  });

  it('completion scripts for bash, zsh and fish; logout revokes the stored key', async () => {
    for (const shell of ['bash', 'zsh', 'fish']) expect(expectOk(await cli(['completion', shell])).stdout).toMatch(/slipway/);
    expect(expectOk(await cli(['completion', 'bash'])).stdout).toMatch(/"config"\) words="[^"]*\bimport\b/);
    const stored = JSON.parse(readFileSync(join(home, '.config', 'slipway', 'config.json'), 'utf8'));
    expectOk(await cli(['logout']));
    const after = await slipway(['whoami', '--api-key', stored.api_key], env);
    expect(after.code).toBe(4);
  });

  it('the secret never appeared in any output', () => {
    expect(transcript.length).toBeGreaterThan(40);
    for (const text of transcript) expect(text).not.toContain(SECRET);
  });
});
