import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../helpers/harness.js';
import { TestRepo } from '../helpers/git-repo.js';
import { localRuntime } from '../helpers/local-runtime.js';
import { routerGet } from '../helpers/router-get.js';
import { waitFor } from '../helpers/wait.js';
import { createApp, type TestApp } from '../pipeline-build/fixtures.js';
import { chainDeploy, runToEnd, sandboxMissing } from '../isolation/fixtures.js';
import { slipway } from '../cli/slipway.js';

/**
 * Issue 31, persistent volumes on the local runtime: a real application, built and deployed by
 * the pipeline, writes a file to its volume over HTTP; a redeploy (stop-then-start) keeps it; a
 * write past the size fails with ENOSPC inside the sandbox; the API reports the usage; bad
 * input and other organizations are refused and change nothing.
 */
const missing = sandboxMissing();
if (missing) console.warn(missing);

const SERVER = String.raw`
import http.server, os, urllib.parse

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        q = {k: v[0] for k, v in urllib.parse.parse_qs(url.query).items()}
        try:
            if url.path == '/write':
                with open('/data/' + q['name'], 'wb') as f:
                    f.write(b'x' * int(q.get('bytes', '0')) if 'bytes' in q else q['text'].encode())
                body = 'written'
            elif url.path == '/read':
                with open('/data/' + q['name']) as f:
                    body = f.read()
            else:
                body = 'up'
        except OSError as e:
            body = 'error: ' + (os.strerror(e.errno) if e.errno else str(e))
        data = body.encode()
        self.send_response(200)
        self.send_header('content-length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def log_message(self, *args):
        pass

http.server.ThreadingHTTPServer(('127.0.0.1', int(os.environ['PORT'])), Handler).serve_forever()
`;

describe.skipIf(missing)('persistent volumes on the local runtime', () => {
  let h: Harness;
  const repo = new TestRepo();
  let a: TestApp;
  let other: TestApp;
  let host = '';
  /** Applications a test made beside `a` (their volumes are removed after). */
  const moreApps: string[] = [];

  const api = (t: TestApp, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, payload?: object, appId = t.appId) =>
    h.app.inject({ method, url: `/v1/applications/${appId}/volumes${path}`, headers: t.user.headers, ...(payload ? { payload } : {}) });
  const get = async (path: string) => (await routerGet(localRuntime(h.ctx).router.port, host, path, 30_000)).body;

  async function deployed(deploymentId: string) {
    const d = await waitFor(
      'the deployment',
      async () => {
        const r = (await h.app.inject({ method: 'GET', url: `/v1/deployments/${deploymentId}/detail`, headers: a.user.headers })).json();
        return r.complete || r.error ? r : null;
      },
      90_000,
      200,
    );
    expect(d.complete, JSON.stringify(d)).toBe(true);
    return (await h.app.inject({ method: 'GET', url: `/v1/deployments/${deploymentId}/log`, headers: a.user.headers })).body;
  }

  beforeAll(async () => {
    h = await createHarness(
      { ROUTER_HOST: '127.0.0.1', ROUTER_PORT: 0, RUNTIME_STOP_GRACE_MS: 2000, RUNTIME_RESTART_BACKOFF_MS: 200 },
      { jobs: true, runtime: true },
    );
    repo.commit({ 'server.py': SERVER, Procfile: 'web: python3 server.py\n' });
    a = await createApp(h, { github_repository: repo.dir, auto_deploy_branch: 'main', health_check_path: '/', deployment_timeout: 60 });
    other = await createApp(h);
    const { image, deployment } = await chainDeploy(h, a);
    expect(deployment?.complete, JSON.stringify(deployment ?? image)).toBe(true);
    host = new URL(deployment.deploy_metadata.url).hostname;
  }, 240_000);

  afterAll(async () => {
    // The disks go with their records (unmounted; the harness removes DATA_DIR).
    for (const appId of [a.appId, ...moreApps]) {
      const left = (await api(a, 'GET', '', undefined, appId)).json();
      for (const v of Array.isArray(left) ? left : []) await api(a, 'DELETE', `/${v.id}`, undefined, appId);
    }
    const url = `/v1/organizations/${a.orgSlug}/volumes/detached`;
    const detached = (await h.app.inject({ method: 'GET', url, headers: a.user.headers })).json();
    for (const v of Array.isArray(detached) ? detached : [])
      await h.app.inject({ method: 'DELETE', url: `${url}/${v.id}`, headers: a.user.headers });
    await h?.close();
    repo.remove();
  });

  it('mounts a volume that keeps its files across a redeploy, enforces its size and reports its usage', async () => {
    const created = await api(a, 'POST', '', { name: 'uploads', mount_path: '/data', size_mib: 16 });
    expect(created.statusCode, created.body).toBe(201);
    const { volume, deployment_id } = created.json();
    expect(volume).toMatchObject({
      name: 'uploads',
      mount_path: '/data',
      process_type: 'web',
      size_mib: 16,
      deploy_strategy: 'stop-then-start',
    });
    expect(await deployed(deployment_id)).toContain('stop-then-start');

    expect(await get('/write?name=note.txt&text=kept')).toBe('written');
    expect(await get('/read?name=note.txt')).toBe('kept');

    // A redeploy of the same release: a new instance, the same disk.
    const current = (await h.app.inject({ method: 'GET', url: `/v1/deployments/${deployment_id}/detail`, headers: a.user.headers })).json();
    const again = await h.app.inject({ method: 'POST', url: `/v1/releases/${current.release.id}/deploy`, headers: a.user.headers });
    expect(again.statusCode, again.body).toBe(202);
    expect(await deployed(again.json().deployment_id)).toContain('stop-then-start');
    expect(await get('/read?name=note.txt')).toBe('kept');

    // 20 MiB do not fit on a 16 MiB disk: the kernel says so inside the sandbox.
    expect(await get('/write?name=big&bytes=20971520')).toBe('error: No space left on device');
    const shown = (await api(a, 'GET', '/uploads')).json();
    expect(shown.usage.size_bytes).toBeLessThanOrEqual(16 * 1024 * 1024);
    expect(shown.usage.used_bytes).toBeGreaterThan(10 * 1024 * 1024);

    // Growing redeploys (the disk grows unmounted, between stop and start), keeping what was written.
    const grown = await api(a, 'PATCH', '/uploads', { size_mib: 48 });
    expect(grown.statusCode, grown.body).toBe(200);
    expect(await deployed(grown.json().deployment_id)).toContain('stop-then-start');
    expect((await api(a, 'GET', '/uploads')).json().usage.size_bytes).toBeGreaterThan(32 * 1024 * 1024);
    expect(await get('/write?name=big&bytes=20971520')).toBe('written');
    expect(await get('/read?name=note.txt')).toBe('kept');
  });

  it('refuses bad paths, clashes, shrinking, scaling out and other organizations, changing nothing', async () => {
    const before = (await api(a, 'GET', '')).json();
    for (const [mount_path, code] of [
      ['/', 422],
      ['/proc/x', 422],
      ['data', 422],
      ['/srv/../etc', 422],
      ['/usr/local/data', 422],
    ] as const) {
      const r = await api(a, 'POST', '', { name: 'bad', mount_path, size_mib: 16 });
      expect(r.statusCode, `${mount_path}: ${r.body}`).toBe(code);
      expect(r.json().message).toMatch(/mount_path/);
    }
    const clash = await api(a, 'POST', '', { name: 'uploads', mount_path: '/other', size_mib: 16 });
    expect(clash.statusCode).toBe(409);
    expect(clash.json().message).toMatch(/already has a volume named 'uploads'/);
    const samePath = await api(a, 'POST', '', { name: 'second', mount_path: '/data', size_mib: 16 });
    expect(samePath.statusCode).toBe(409);

    // Volumes count in the organization's disk quota at their full size (a tenant may fill them).
    await h.ctx.db.updateTable('organizations').set({ disk_quota_mb: 100 }).where('id', '=', a.orgId).execute();
    const tooBig = await api(a, 'POST', '', { name: 'huge', mount_path: '/huge', size_mib: 200 });
    expect(tooBig.statusCode, tooBig.body).toBe(409);
    expect(tooBig.json().message).toMatch(/^Disk quota exceeded: .* does not fit/);
    const grownPast = await api(a, 'PATCH', '/uploads', { size_mib: 200 });
    expect(grownPast.statusCode, grownPast.body).toBe(409);
    await h.ctx.db.updateTable('organizations').set({ disk_quota_mb: null }).where('id', '=', a.orgId).execute();

    const shrink = await api(a, 'PATCH', '/uploads', { size_mib: 16 });
    expect(shrink.statusCode).toBe(422);
    expect(shrink.json().message).toMatch(/only grow/);

    const scale = await h.app.inject({
      method: 'POST',
      url: `/v1/applications/${a.appId}/scale`,
      headers: a.user.headers,
      payload: { process_counts: { web: 2 } },
    });
    expect(scale.statusCode, scale.body).toBe(422);
    expect(scale.json().message).toMatch(/mounts volume 'uploads'/);

    // Another organization's member sees nothing of it and cannot touch it.
    for (const [method, path] of [
      ['GET', ''],
      ['POST', ''],
      ['GET', '/uploads'],
      ['PATCH', '/uploads'],
      ['DELETE', '/uploads'],
    ] as const) {
      const payload =
        method === 'POST' ? { name: 'theirs', mount_path: '/x', size_mib: 16 } : method === 'PATCH' ? { size_mib: 64 } : undefined;
      const r = await api(other, method, path, payload, a.appId);
      expect(r.statusCode, `${method} ${path}`).toBe(403);
    }
    expect((await api(a, 'GET', '')).json()).toEqual(before);
  });

  let address = '';
  /** The CLI's environment: the harness's server listening on a loopback port (once per file). */
  async function cliEnv() {
    address ||= await h.app.listen({ port: 0, host: '127.0.0.1' });
    return { SLIPWAY_SERVER: address, SLIPWAY_API_KEY: a.user.apiKey };
  }

  it('is listed and deleted with the CLI (the deletion asks for the name again, then redeploys without it)', async () => {
    const env = await cliEnv();
    const app = `${a.orgSlug}/shop/web`;
    const list = await slipway(['volumes', 'list', '--app', app], env);
    expect(list.stdout, list.stderr).toMatch(/uploads\s+\/data\s+web\s+48 MiB\s+\d+\.\d MiB of \d+\.\d MiB/);

    const unconfirmed = await slipway(['volumes', 'delete', 'uploads', '--app', app], env);
    expect(unconfirmed.code).not.toBe(0);
    expect(unconfirmed.stderr).toMatch(/--confirm uploads/);
    expect((await api(a, 'GET', '')).json()).toHaveLength(1);

    const deleted = await slipway(['volumes', 'delete', 'uploads', '--app', app, '--confirm', 'uploads', '--json'], env);
    expect(deleted.code, deleted.stderr).toBe(0);
    await deployed(JSON.parse(deleted.stdout).deployment_id);
    expect((await api(a, 'GET', '')).json()).toEqual([]);
    // The instance runs without it: /data is gone from its sandbox.
    expect(await get('/read?name=note.txt')).toMatch(/^error: No such file or directory/);

    // Each change is in the organization's audit log, under the route that made it.
    const audit = await h.app.inject({ method: 'GET', url: `/v1/organizations/${a.orgSlug}/audit-log`, headers: a.user.headers });
    expect(audit.statusCode, audit.body).toBe(200);
    const actions = JSON.stringify(audit.json());
    for (const method of ['POST', 'PATCH', 'DELETE'])
      expect(actions).toContain(`${method} /v1/applications/:application_id/volumes${method === 'POST' ? '' : '/:volume'}`);
  }, 120_000);

  it('outlives its deleted application (listed, counted in the quota), re-attaches to another application of the organization with its files, and is deleted', async () => {
    const org = (method: 'GET' | 'POST' | 'DELETE', path: string, payload?: object, t = a, slug = a.orgSlug) =>
      h.app.inject({
        method,
        url: `/v1/organizations/${slug}/volumes/detached${path}`,
        headers: t.user.headers,
        ...(payload ? { payload } : {}),
      });
    const created = await api(a, 'POST', '', { name: 'keep', mount_path: '/data', size_mib: 16 });
    expect(created.statusCode, created.body).toBe(201);
    const volumeId = created.json().volume.id;
    await deployed(created.json().deployment_id);
    expect(await get('/write?name=moved.txt&text=still-here')).toBe('written');

    // A second application of the organization (built from the same repository, not yet deployed).
    const made = await h.app.inject({
      method: 'POST',
      url: '/v1/applications',
      headers: a.user.headers,
      payload: { name: 'Worker', project_id: a.projectId },
    });
    expect(made.statusCode, made.body).toBe(201);
    const b: TestApp = { ...a, appId: made.json().id };
    moreApps.push(b.appId);
    const settings = { github_repository: repo.dir, auto_deploy_branch: 'main', health_check_path: '/', deployment_timeout: 60 };
    expect(
      (await h.app.inject({ method: 'PATCH', url: `/v1/applications/${b.appId}/settings`, headers: a.user.headers, payload: settings }))
        .statusCode,
    ).toBe(200);

    const removed = await h.app.inject({ method: 'DELETE', url: `/v1/applications/${a.appId}`, headers: a.user.headers });
    expect(removed.statusCode, removed.body).toBe(204);
    // Listed by the CLI (`slipway volumes detached`), as a table and as JSON.
    const env = await cliEnv();
    const table = await slipway(['volumes', 'detached', '--org', a.orgSlug], env);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(new RegExp(`${volumeId}\\s+keep\\s+/data\\s+web\\s+16 MiB`));
    const listed = await slipway(['volumes', 'detached', '--org', a.orgSlug, '--json'], env);
    expect(JSON.parse(listed.stdout)).toEqual([
      expect.objectContaining({ id: volumeId, name: 'keep', application_id: null, mount_path: '/data', size_mib: 16 }),
    ]);
    // Its 16 MiB still count: 16 + 32 do not fit in 40.
    await h.ctx.db.updateTable('organizations').set({ disk_quota_mb: 40 }).where('id', '=', a.orgId).execute();
    const past = await api(b, 'POST', '', { name: 'more', mount_path: '/more', size_mib: 32 });
    expect(past.statusCode, past.body).toBe(409);
    await h.ctx.db.updateTable('organizations').set({ disk_quota_mb: null }).where('id', '=', a.orgId).execute();

    // Other organizations see none of it and cannot take it; an application elsewhere is refused.
    expect((await org('GET', '', undefined, other)).statusCode).toBe(403);
    expect((await org('POST', `/${volumeId}/attach`, { application_id: other.appId }, other, other.orgSlug)).statusCode).toBe(404);
    expect((await org('DELETE', `/${volumeId}`, undefined, other, other.orgSlug)).statusCode).toBe(404);
    const elsewhere = await org('POST', `/${volumeId}/attach`, { application_id: other.appId });
    expect(elsewhere.statusCode, elsewhere.body).toBe(422);
    expect(elsewhere.json().message).toMatch(/application_id/);
    expect((await org('POST', `/${volumeId}/attach`, { application_id: b.appId, mount_path: '/proc' })).statusCode).toBe(422);
    expect((await org('GET', '')).json()).toHaveLength(1);

    // Re-attached by the CLI to the second application (--app), in its production environment.
    const attached = await slipway(['volumes', 'attach-detached', volumeId, '--app', `${a.orgSlug}/shop/worker`, '--json'], env);
    expect(attached.code, attached.stderr).toBe(0);
    expect(JSON.parse(attached.stdout)).toMatchObject({
      volume: { id: volumeId, application_id: b.appId, environment: 'production' },
      deployment_id: null,
    });
    expect((await org('GET', '')).json()).toEqual([]);
    expect((await org('DELETE', `/${volumeId}`)).statusCode).toBe(409);
    const { deployment } = await chainDeploy(h, b);
    expect(deployment?.complete, JSON.stringify(deployment)).toBe(true);
    host = new URL(deployment.deploy_metadata.url).hostname;
    // The first application's file, now the second's to read and write beside.
    expect(await get('/read?name=moved.txt')).toBe('still-here');
    expect(await get('/write?name=new.txt&text=mine')).toBe('written');

    // A one-off run of web mounts the volume at the same path, shared read-write with the running instance.
    const { run, log } = await runToEnd(h, b, 'cat /data/moved.txt && echo from-run > /data/run.txt');
    expect(run.status, log).toBe('succeeded');
    expect(log).toContain('still-here');
    expect(await get('/read?name=run.txt')).toBe('from-run\n');

    // Deleted with the second application too, it is removed through the organization, data and all.
    expect((await h.app.inject({ method: 'DELETE', url: `/v1/applications/${b.appId}`, headers: a.user.headers })).statusCode).toBe(204);
    const unconfirmed = await slipway(['volumes', 'delete-detached', volumeId, '--org', a.orgSlug], env);
    expect(unconfirmed.code).not.toBe(0);
    expect(unconfirmed.stderr).toContain(`--confirm ${volumeId}`);
    expect((await org('GET', '')).json()).toHaveLength(1);
    const gone = await slipway(['volumes', 'delete-detached', volumeId, '--org', a.orgSlug, '--confirm', volumeId], env);
    expect(gone.code, gone.stderr).toBe(0);
    expect(gone.stdout).toContain('deleted keep and its data');
    expect((await slipway(['volumes', 'detached', '--org', a.orgSlug], env)).stderr).toContain('no detached volumes');
    expect((await org('GET', '')).json()).toEqual([]);
  }, 240_000);
});
