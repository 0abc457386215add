import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, unlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openCredentials, redisCommands } from '../../src/platform/addons/index.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { TestRepo } from '../helpers/git-repo.js';
import { localRuntime } from '../helpers/local-runtime.js';
import { routerGet } from '../helpers/router-get.js';
import { publishedEvents } from '../helpers/published-events.js';
import { waitFor } from '../helpers/wait.js';
import { createApp, type TestApp } from '../pipeline-build/fixtures.js';
import { chainDeploy, runToEnd, sandboxMissing } from '../isolation/fixtures.js';
import { slipway } from '../cli/slipway.js';
import { findPlan } from '../../src/platform/addons/plans.js';

/**
 * Issue 31, first landing: Postgres and Redis add-ons on the local runtime. A real application,
 * built and deployed by the pipeline, writes a row and a key through the URLs its attachments
 * gave it and reads them back over HTTP; an application they are not attached to cannot even
 * connect; detaching removes the variable in a new release; bad input changes nothing.
 */
const missing = sandboxMissing();
if (missing) console.warn(missing);

/** The app talks to its add-ons with the Debian clients its sandbox sees read-only in /usr. */
const SERVER = String.raw`
import http.server, os, subprocess, socket, urllib.parse

def run(args):
    p = subprocess.run(args, capture_output=True, text=True, timeout=20)
    return (p.stdout.strip() if p.returncode == 0 else 'error: ' + p.stderr.strip()[-300:])

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        q = {k: v[0] for k, v in urllib.parse.parse_qs(url.query).items()}
        if url.path == '/pg-write':
            body = run(['psql', os.environ.get('DATABASE_URL', 'missing'), '-Atc',
                        "CREATE TABLE IF NOT EXISTS notes (v text); INSERT INTO notes VALUES ('" + q['v'] + "')"])
        elif url.path == '/pg-read':
            body = run(['psql', os.environ.get('DATABASE_URL', 'missing'), '-Atc', "SELECT string_agg(v, ',' ORDER BY v) FROM notes"])
        elif url.path == '/redis-write':
            body = run(['redis-cli', '--no-auth-warning', '-u', os.environ.get('REDIS_URL', 'missing'), 'SET', 'greeting', q['v']])
        elif url.path == '/redis-read':
            body = run(['redis-cli', '--no-auth-warning', '-u', os.environ.get('REDIS_URL', 'missing'), 'GET', 'greeting'])
        elif url.path == '/connect':
            s = socket.socket()
            s.settimeout(2)
            body = str(s.connect_ex(('127.0.0.1', int(q['port']))))
            s.close()
        else:
            body = 'has DATABASE_URL: ' + str('DATABASE_URL' in os.environ)
        data = body.encode()
        self.send_response(200)
        self.send_header('content-length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def log_message(self, *args):
        pass

http.server.ThreadingHTTPServer(('127.0.0.1', int(os.environ['PORT'])), Handler).serve_forever()
`;

/** The memory limit of the control group a process runs in (cgroup v1's memory controller, or v2). */
function memoryLimitOf(pid: number): string {
  const lines = readFileSync(`/proc/${pid}/cgroup`, 'utf8').trim().split('\n');
  const v1 = lines.find((l) => l.split(':')[1]!.split(',').includes('memory'));
  const file = v1
    ? join('/sys/fs/cgroup/memory', v1.split(':')[2]!, 'memory.limit_in_bytes')
    : join('/sys/fs/cgroup', lines.find((l) => l.startsWith('0::'))!.slice(3), 'memory.max');
  return readFileSync(file, 'utf8').trim();
}

describe.skipIf(missing)('add-ons (Postgres and Redis) on the local runtime', () => {
  let h: Harness;
  const repos: TestRepo[] = [];
  let a: TestApp;
  let b: TestApp;
  let hostA = '';
  let hostB = '';

  async function deploy(): Promise<{ app: TestApp; host: string }> {
    const repo = new TestRepo();
    repos.push(repo);
    repo.commit({ 'server.py': SERVER, Procfile: 'web: python3 server.py\n' });
    const app = await createApp(h, {
      github_repository: repo.dir,
      auto_deploy_branch: 'main',
      health_check_path: '/',
      deployment_timeout: 60,
    });
    const { image, deployment } = await chainDeploy(h, app);
    expect(deployment?.complete, JSON.stringify(deployment ?? image)).toBe(true);
    return { app, host: new URL(deployment.deploy_metadata.url).hostname };
  }

  const api = (t: TestApp, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, payload?: object) =>
    h.app.inject({ method, url: `/v1/organizations/${t.orgSlug}/addons${path}`, headers: t.user.headers, ...(payload ? { payload } : {}) });
  const get = async (host: string, path: string) => (await routerGet(localRuntime(h.ctx).router.port, host, path, 30_000)).body;

  /** Waits until the deployment an add-on change queued has settled, and requires it complete. */
  async function deployed(t: TestApp, deploymentId: string) {
    const d = await waitFor(
      'the deployment of the new release',
      async () => {
        const r = (await h.app.inject({ method: 'GET', url: `/v1/deployments/${deploymentId}/detail`, headers: t.user.headers })).json();
        return r.complete || r.error ? r : null;
      },
      90_000,
      200,
    );
    expect(d.complete, JSON.stringify(d)).toBe(true);
  }

  async function portOf(name: string, t: TestApp) {
    const row = await h.ctx.db
      .selectFrom('addons')
      .select('port')
      .where('name', '=', name)
      .where('organization_id', '=', t.orgId)
      .executeTakeFirstOrThrow();
    return row.port;
  }

  beforeAll(async () => {
    h = await createHarness(
      { ROUTER_HOST: '127.0.0.1', ROUTER_PORT: 0, RUNTIME_STOP_GRACE_MS: 2000, RUNTIME_RESTART_BACKOFF_MS: 200 },
      { jobs: true, runtime: true },
    );
    [{ app: a, host: hostA }, { app: b, host: hostB }] = await Promise.all([deploy(), deploy()]);
  }, 240_000);

  afterAll(async () => {
    await h?.close();
    for (const r of repos) r.remove();
  });

  it('creates a Postgres and a Redis add-on, each its own server accepting connections', async () => {
    const pgCreated = await api(a, 'POST', '', { name: 'db', kind: 'postgres' });
    expect(pgCreated.statusCode, pgCreated.body).toBe(201);
    expect(pgCreated.json().status_detail).toBeNull();
    expect(pgCreated.json()).toMatchObject({ name: 'db', kind: 'postgres', plan: 'hobby', status: 'running', attachments: [] });
    expect(pgCreated.json().limits).toEqual({ memory_mib: 256, cpu_millicores: 500, connections: 20 });
    const redisCreated = await api(a, 'POST', '', { name: 'cache', kind: 'redis', plan: 'hobby' });
    expect(redisCreated.statusCode, redisCreated.body).toBe(201);
    expect(redisCreated.json().status_detail).toBeNull();
    expect(redisCreated.json().status).toBe('running');
    // No password anywhere in what the API answers.
    expect(JSON.stringify([pgCreated.json(), redisCreated.json()])).not.toMatch(/password|postgres:\/\/|redis:\/\//);
    const listed = (await api(a, 'GET', '')).json();
    expect(listed.map((x: { name: string }) => x.name)).toEqual(['cache', 'db']);
  }, 60_000);

  it("enforces its plan: the sandbox's memory.max, Postgres' max_connections and Redis' maxmemory/maxclients are the plan's", async () => {
    for (const [name, kind] of [
      ['db', 'postgres'],
      ['cache', 'redis'],
    ] as const) {
      const row = await h.ctx.db
        .selectFrom('addons')
        .select(['pid', 'plan', 'port', 'credentials_sealed'])
        .where('name', '=', name)
        .where('organization_id', '=', a.orgId)
        .executeTakeFirstOrThrow();
      const plan = findPlan(kind, row.plan)!;
      expect(memoryLimitOf(row.pid!)).toBe(String(plan.memoryMiB * 1024 * 1024));
      // The running server's own settings.
      if (kind === 'postgres') {
        const shown = await api(a, 'POST', '/db/query', { sql: 'SHOW max_connections' });
        expect(shown.statusCode, shown.body).toBe(200);
        expect(shown.json().rows).toEqual([[String(plan.connections)]]);
      } else {
        const c = openCredentials(h.ctx.secrets, row.credentials_sealed);
        const config = (key: string) =>
          execFileSync(
            'redis-cli',
            ['--no-auth-warning', '-h', '127.0.0.1', '-p', String(row.port), '--user', c.user, 'CONFIG', 'GET', key],
            {
              env: { ...process.env, REDISCLI_AUTH: c.password },
              encoding: 'utf8',
            },
          ).split('\n');
        expect(config('maxmemory')[1]).toBe(String(plan.maxmemoryMiB! * 1024 * 1024));
        expect(config('maxclients')[1]).toBe(String(plan.connections));
      }
    }
  });

  it('answers bad input with a clear 4xx and changes nothing', async () => {
    const clash = await api(a, 'POST', '', { name: 'db', kind: 'redis' });
    expect(clash.statusCode).toBe(409);
    expect(clash.json().message).toMatch(/already exists/);
    const plan = await api(a, 'POST', '', { name: 'other', kind: 'postgres', plan: 'gigantic' });
    expect(plan.statusCode).toBe(422);
    expect(plan.json().message).toMatch(/no postgres plan named 'gigantic' \(plans: hobby, standard\)/);
    expect((await api(a, 'POST', '', { name: 'other', kind: 'mysql' })).statusCode).toBe(422);
    // A's member cannot attach A's add-on to B's application, and B cannot see A's add-ons at all.
    const across = await api(a, 'POST', '/db/attachments', { application_id: b.appId });
    expect(across.statusCode).toBe(403);
    expect(
      (await h.app.inject({ method: 'GET', url: `/v1/organizations/${a.orgSlug}/addons/db`, headers: b.user.headers })).statusCode,
    ).toBe(403);
    expect((await api(a, 'POST', '/nope/attachments', { application_id: a.appId })).statusCode).toBe(404);
    expect((await api(a, 'PATCH', '/db', { plan: 'gigantic' })).statusCode).toBe(422);
    expect((await api(a, 'POST', '/cache/query', { sql: 'SELECT 1' })).statusCode).toBe(422);
    const listed = (await api(a, 'GET', '')).json();
    expect(listed.map((x: { name: string; plan: string; attachments: unknown[] }) => [x.name, x.plan, x.attachments.length])).toEqual([
      ['cache', 'hobby', 0],
      ['db', 'hobby', 0],
    ]);
  });

  it('attaching gives the deployed app its URLs in a new release: it writes a row and a key and reads them back', async () => {
    const pg = await api(a, 'POST', '/db/attachments', { application_id: a.appId });
    expect(pg.statusCode, pg.body).toBe(201);
    expect(pg.json().addon.attachments).toMatchObject([{ application_id: a.appId, environment: 'production', variable: 'DATABASE_URL' }]);
    expect(pg.json().releases).toHaveLength(1);
    const twice = await api(a, 'POST', '/db/attachments', { application_id: a.appId });
    expect(twice.statusCode).toBe(409);
    const redis = await api(a, 'POST', '/cache/attachments', { application_id: a.appId });
    expect(redis.statusCode, redis.body).toBe(201);
    await deployed(a, redis.json().releases[0].deployment_id);
    // The release shows the variables as secrets, never their values.
    const release = (
      await h.app.inject({ method: 'GET', url: `/v1/releases/${redis.json().releases[0].release_id}/detail`, headers: a.user.headers })
    ).json();
    expect(JSON.stringify(release)).not.toMatch(/postgres:\/\/|redis:\/\//);

    expect(await get(hostA, '/pg-write?v=first')).toMatch(/INSERT 0 1$/);
    expect(await get(hostA, '/pg-write?v=second')).toMatch(/INSERT 0 1$/);
    expect(await get(hostA, '/pg-read')).toBe('first,second');
    expect(await get(hostA, '/redis-write?v=hello')).toBe('OK');
    expect(await get(hostA, '/redis-read')).toBe('hello');

    // `slipway addons psql`: the platform reaches it too, as the applications' user.
    const q = await api(a, 'POST', '/db/query', { sql: 'SELECT v FROM notes ORDER BY v' });
    expect(q.statusCode, q.body).toBe(200);
    expect(q.json()).toMatchObject({ command: 'SELECT', columns: ['v'], rows: [['first'], ['second']], truncated: false });
    expect((await api(a, 'POST', '/db/query', { sql: 'SELEC nonsense' })).statusCode).toBe(422);

    // The CLI, as a user runs it: the list, and psql with -c and with statements on stdin.
    const address = await h.app.listen({ port: 0, host: '127.0.0.1' });
    const env = { SLIPWAY_SERVER: address, SLIPWAY_API_KEY: a.user.apiKey };
    const list = await slipway(['addons', 'list', '--org', a.orgSlug], env);
    expect(list.stdout, list.stderr).toMatch(/cache\s+redis\s+hobby\s+running\s+web \(production\)/);
    const once = await slipway(['addons', 'psql', 'db', '--org', a.orgSlug, '-c', 'SELECT count(*) AS n FROM notes'], env);
    expect(once.stdout, once.stderr).toMatch(/n\s*\n\s*2/);
    const piped = await slipway(['addons', 'psql', 'db', '--org', a.orgSlug, '--json'], env, {
      input: 'SELECT v\n FROM notes ORDER BY v;\n',
    });
    expect(JSON.parse(piped.stdout).rows, piped.stderr).toEqual([['first'], ['second']]);
  }, 120_000);

  it('is unreachable from an application it is not attached to (its instance and its one-off runs)', async () => {
    const [pgPort, redisPort] = [await portOf('db', a), await portOf('cache', a)];
    expect(await get(hostA, `/connect?port=${pgPort}`)).toBe('0');
    for (const port of [pgPort, redisPort]) expect(await get(hostB, `/connect?port=${port}`)).not.toBe('0');
    const { run, log } = await runToEnd(
      h,
      b,
      `python3 -c "import socket; s=socket.socket(); s.settimeout(2); print('connect', s.connect_ex(('127.0.0.1', ${pgPort})))"`,
    );
    expect(run.status).toBe('succeeded');
    expect(log).toMatch(/connect [1-9]/);
  }, 60_000);

  it("its server reaches nothing, and a link put in its socket's place leads nowhere (the forwarder sees only its directory)", async () => {
    const row = await h.ctx.db.selectFrom('addons').selectAll().where('name', '=', 'cache').executeTakeFirstOrThrow();
    const c = openCredentials(h.ctx.secrets, row.credentials_sealed);
    // MIGRATE connects out from the server: its namespace has only its loopback, so not even the
    // host's loopback (the edge listens there) answers.
    const edge = localRuntime(h.ctx).router.port;
    const [migrated] = (await redisCommands(row.port, c, [['MIGRATE', '127.0.0.1', String(edge), 'greeting', '0', '1000', 'COPY']]))!;
    expect(migrated).toMatch(/^IOERR/);

    // A unix socket on the host that the add-on's user may connect to, and the server's socket
    // replaced by a link to it (what a compromised server could do): nothing reaches it.
    const outside = mkdtempSync(join(tmpdir(), 'slipway-addon-link-'));
    chmodSync(outside, 0o755);
    let reached = 0;
    const bait = createServer((s) => {
      reached++;
      s.end('+PONG\r\n');
    });
    await new Promise<void>((r) => bait.listen(join(outside, 'bait.sock'), r));
    chmodSync(join(outside, 'bait.sock'), 0o777);
    const socket = join(h.ctx.config.dataDir, 'addons', row.id, 'run', `redis-${row.port}.sock`);
    renameSync(socket, `${socket}.real`);
    symlinkSync(join(outside, 'bait.sock'), socket);
    try {
      expect(await redisCommands(row.port, c, [['PING']])).toBeNull();
      expect(reached).toBe(0);
    } finally {
      unlinkSync(socket);
      renameSync(`${socket}.real`, socket);
      bait.close();
      rmSync(outside, { recursive: true, force: true });
    }
    expect(await redisCommands(row.port, c, [['PING']])).toEqual(['PONG']);
  }, 30_000);

  it('restarts a server that dies, with its data (Redis: the append-only file)', async () => {
    const before = await h.ctx.db.selectFrom('addons').select(['id', 'pid']).where('name', '=', 'cache').executeTakeFirstOrThrow();
    process.kill(-before.pid!, 'SIGKILL');
    await waitFor(
      'the restarted Redis',
      async () => {
        const now = await h.ctx.db.selectFrom('addons').select(['pid', 'status']).where('id', '=', before.id).executeTakeFirstOrThrow();
        return now.status === 'running' && now.pid !== before.pid && now.pid;
      },
      30_000,
      100,
    );
    expect(await get(hostA, '/redis-read')).toBe('hello');
  }, 40_000);

  it('rotates the credentials with a new release the app keeps working with', async () => {
    const rotated = await api(a, 'POST', '/db/rotate');
    expect(rotated.statusCode, rotated.body).toBe(200);
    expect(rotated.json().releases).toHaveLength(1);
    await deployed(a, rotated.json().releases[0].deployment_id);
    expect(await get(hostA, '/pg-read')).toBe('first,second');
  }, 60_000);

  it('detaching removes the variable in a new release; a deleted add-on can be undeleted with its data', async () => {
    const shown = (await api(a, 'GET', '/db')).json();
    expect((await api(a, 'DELETE', '/db')).statusCode).toBe(409);
    const detached = await api(a, 'DELETE', `/db/attachments/${shown.attachments[0].id}`);
    expect(detached.statusCode, detached.body).toBe(200);
    expect(detached.json().addon.attachments).toEqual([]);
    await deployed(a, detached.json().releases[0].deployment_id);
    expect(await get(hostA, '/')).toBe('has DATABASE_URL: False');
    const release = (
      await h.app.inject({ method: 'GET', url: `/v1/releases/${detached.json().releases[0].release_id}/detail`, headers: a.user.headers })
    ).json();
    expect(release.configuration.map((v: { name: string }) => v.name)).toEqual(['REDIS_URL']);
    expect(release.configuration_changes.removed).toEqual(['DATABASE_URL']);

    const deleted = await api(a, 'DELETE', '/db');
    expect(deleted.statusCode, deleted.body).toBe(200);
    expect(deleted.json()).toMatchObject({ status: 'deleted' });
    expect(Date.parse(deleted.json().purge_after)).toBeGreaterThan(Date.now());
    expect((await api(a, 'POST', '/db/query', { sql: 'SELECT 1' })).statusCode).toBe(409);
    const back = await api(a, 'POST', '/db/undelete');
    expect(back.statusCode, back.body).toBe(200);
    expect(back.json()).toMatchObject({ status: 'running', deleted_at: null });
    expect((await api(a, 'POST', '/db/query', { sql: 'SELECT count(*) FROM notes' })).json().rows).toEqual([['2']]);
  }, 90_000);

  it('deleting an application keeps its add-ons; with_addons deletes them too (undeletable), refused whole while one is attached elsewhere', async () => {
    // A subscription, so the organization's add-on events are recorded (its address is never reached).
    await h.ctx.db
      .insertInto('webhooks')
      .values({
        id: uuidv7(),
        organization_id: a.orgId,
        url: 'http://127.0.0.1:9/',
        events: ['addon.created', 'addon.attached', 'addon.resized', 'addon.deleted'],
        secret_sealed: h.ctx.secrets.seal('k'),
      })
      .execute();
    const inject = (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) =>
      h.app.inject({ method, url, headers: a.user.headers, ...(payload ? { payload } : {}) });
    const appExists = async (id: string) =>
      (await h.ctx.db.selectFrom('applications').select('id').where('id', '=', id).executeTakeFirst()) !== undefined;
    const newApp = async (name: string) =>
      (await inject('POST', '/v1/applications', { name, project_id: a.projectId })).json().id as string;
    const [keeper, dropper, other] = [await newApp('Keeper'), await newApp('Dropper'), await newApp('Other')];
    for (const name of ['kept', 'dropped', 'shared']) expect((await api(a, 'POST', '', { name, kind: 'redis' })).statusCode).toBe(201);
    for (const name of ['kept', 'dropped', 'shared'])
      await waitFor(`${name} running`, async () => (await api(a, 'GET', `/${name}`)).json().status === 'running', 30_000, 100);
    for (const [name, app] of [
      ['kept', keeper],
      ['dropped', dropper],
      ['shared', other],
    ] as const)
      expect((await api(a, 'POST', `/${name}/attachments`, { application_id: app })).statusCode).toBe(201);
    // A second Redis for the same application environment: REDIS_URL is taken, so under a name the member chooses.
    const clash = await api(a, 'POST', '/shared/attachments', { application_id: dropper });
    expect(clash.statusCode).toBe(409);
    expect(clash.json().message).toMatch(/already has an add-on attached as REDIS_URL: choose another name with "as"/);
    const named = await api(a, 'POST', '/shared/attachments', { application_id: dropper, as: 'SESSIONS_URL' });
    expect(named.statusCode, named.body).toBe(201);
    expect(named.json().addon.attachments).toContainEqual(expect.objectContaining({ application_id: dropper, variable: 'SESSIONS_URL' }));
    // A resize restarts it under the new plan's limits.
    const resized = await api(a, 'PATCH', '/kept', { plan: 'standard' });
    expect(resized.statusCode, resized.body).toBe(200);
    expect(resized.json()).toMatchObject({ plan: 'standard', limits: { memory_mib: 256, connections: 1000 } });

    // Without with_addons: the application goes, its add-on stays (running, detached).
    expect((await inject('DELETE', `/v1/applications/${keeper}`)).statusCode).toBe(204);
    expect((await api(a, 'GET', '/kept')).json()).toMatchObject({ deleted_at: null, attachments: [] });

    // A key limited to the application may delete it, never the organization's add-ons with it.
    const narrow = await inject('POST', '/v1/auth/api-keys', {
      name: 'dropper only',
      organization: a.orgSlug,
      project: 'shop',
      application: 'dropper',
    });
    expect(narrow.statusCode, narrow.body).toBe(201);
    const narrowRefused = await h.app.inject({
      method: 'DELETE',
      url: `/v1/applications/${dropper}?with_addons=true`,
      headers: { 'x-api-key': narrow.json().key },
    });
    expect(narrowRefused.statusCode, narrowRefused.body).toBe(403);
    expect(narrowRefused.json().message).toMatch(/limited below its organization/);
    expect(await appExists(dropper)).toBe(true);

    // With it, an add-on also attached to another application refuses the whole delete: nothing goes.
    const refused = await inject('DELETE', `/v1/applications/${dropper}?with_addons=true`);
    expect(refused.statusCode).toBe(409);
    expect(refused.json().message).toMatch(/^Add-on 'shared' is also attached to other \(production\): detach it there first/);
    expect(await appExists(dropper)).toBe(true);
    expect((await api(a, 'GET', '/dropped')).json()).toMatchObject({ deleted_at: null, attachments: [{ application_id: dropper }] });

    const shared = (await api(a, 'GET', '/shared')).json();
    const elsewhere = shared.attachments.find((t: { application_id: string }) => t.application_id === other);
    expect((await api(a, 'DELETE', `/shared/attachments/${elsewhere.id}`)).statusCode).toBe(200);
    // Then it goes with its add-ons, here through the CLI as a member runs it.
    const address = h.app.server.listening
      ? `http://127.0.0.1:${(h.app.server.address() as { port: number }).port}`
      : await h.app.listen({ port: 0, host: '127.0.0.1' });
    const deleted = await slipway(['apps', 'delete', `${a.orgSlug}/shop/dropper`, '--yes', '--with-addons'], {
      SLIPWAY_SERVER: address,
      SLIPWAY_API_KEY: a.user.apiKey,
    });
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stdout).toMatch(/^Deleted .*dropper and its add-ons/m);
    expect(await appExists(dropper)).toBe(false);
    for (const name of ['dropped', 'shared']) {
      const view = (await api(a, 'GET', `/${name}`)).json();
      expect(view).toMatchObject({ status: 'deleted', attachments: [] });
      expect(Date.parse(view.purge_after)).toBeGreaterThan(Date.now());
    }
    expect((await api(a, 'GET', '/kept')).json().deleted_at).toBeNull();

    // Each change sent its event.
    const events = (await publishedEvents(h.ctx.db, a.orgId)).map((e) => ({ event: e.event, ...e.data }));
    // Announced once made, with how it came out.
    expect(events).toContainEqual(expect.objectContaining({ event: 'addon.created', name: 'kept', kind: 'redis', status: 'running' }));
    expect(events).toContainEqual(expect.objectContaining({ event: 'addon.attached', name: 'shared', variable: 'SESSIONS_URL' }));
    expect(events).toContainEqual(expect.objectContaining({ event: 'addon.resized', name: 'kept', from: 'hobby', to: 'standard' }));
    for (const name of ['dropped', 'shared']) expect(events).toContainEqual(expect.objectContaining({ event: 'addon.deleted', name }));
  }, 120_000);
});
