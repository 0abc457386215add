import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { TestRepo } from '../helpers/git-repo.js';
import { localRuntime } from '../helpers/local-runtime.js';
import { routerGet } from '../helpers/router-get.js';
import { seedApplication } from '../helpers/seed.js';
import { waitFor } from '../helpers/wait.js';
import { sandboxMissing } from '../isolation/fixtures.js';
import { slipway } from '../cli/slipway.js';
import { buildBusyboxBase, BASE_IMAGE } from '../registry/base-image.js';
import { freePort, missingBinary, run, startRegistryFor, type RegistryServer } from '../registry/registry-server.js';

/**
 * Issue 34, the Compose import: a file with a service built from a local source, one from an
 * image pushed to the built-in registry and a `postgres` service becomes two deployed
 * applications and a Postgres add-on whose URL the built one uses; importing it again changes
 * nothing; what cannot be mapped is listed with its reason; a malformed file is a 422 naming the line.
 */
const missing =
  sandboxMissing() ||
  missingBinary({
    buildah: 'buildah',
    'docker-registry': 'docker-registry',
    skopeo: 'skopeo',
    busybox: 'busybox-static',
    psql: 'postgresql-client',
  });
if (missing) console.warn(`[test/compose] skipping: ${missing}`);

const SERVER = String.raw`
import http.server, os, subprocess

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path.startswith('/pg'):
            p = subprocess.run(['psql', os.environ.get('DATABASE_URL', 'missing'), '-Atc',
                                "CREATE TABLE IF NOT EXISTS visits (n int); INSERT INTO visits VALUES (1); SELECT count(*) FROM visits"],
                               capture_output=True, text=True, timeout=20)
            body = p.stdout.strip().splitlines()[-1] if p.returncode == 0 else 'error: ' + p.stderr.strip()[-300:]
        else:
            body = os.environ.get('GREETING', 'none') + ' ' + str('API_TOKEN' in os.environ) + ' ' + os.environ.get('SESSION_SECRET', 'none')
        data = body.encode()
        self.send_response(200)
        self.send_header('content-length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def log_message(self, *args):
        pass

http.server.ThreadingHTTPServer(('127.0.0.1', int(os.environ['PORT'])), Handler).serve_forever()
`;

const SERVICE = 'slipway-registry';

/** busybox's httpd serving one page on its EXPOSE port, made with buildah (no network) as an OCI layout for skopeo. */
async function makeImageLayout(dir: string): Promise<string> {
  const storage = join(dir, 'storage');
  await buildBusyboxBase(storage);
  const buildah = (...args: string[]) =>
    run('buildah', ['--root', join(storage, 'storage'), '--runroot', join(storage, 'run'), '--storage-driver', 'vfs', ...args]);
  const container = (await buildah('from', '--pull=false', BASE_IMAGE)).stdout.trim();
  const mount = (await buildah('mount', container)).stdout.trim();
  await run('sh', [
    '-c',
    `mkdir -p ${mount}/www && echo "front from an image" > ${mount}/www/index.html && mkdir ${mount}/www/alt && echo "front from the command" > ${mount}/www/alt/index.html && chmod -R a+rX ${mount}/www`,
  ]);
  await buildah('config', '--port', '8080', '--workingdir', '/www', '--cmd', 'httpd -f -p 8080 -h /www', container);
  await buildah('commit', '-q', container, 'localhost/front:v1');
  await buildah('rm', container);
  const layout = join(dir, 'layout');
  await buildah('push', '--quiet', 'localhost/front:v1', `oci:${layout}:v1`);
  return layout;
}

describe.skipIf(!!missing)('slipway compose import', () => {
  let h: Harness;
  let registry: RegistryServer;
  let owner: TestUser;
  let orgSlug = '';
  let projectId = '';
  let repo: TestRepo;
  let dir = '';
  let compose = '';
  let frontId = '';
  const envFile = 'SESSION_SECRET=from-env-file\n';

  const post = (step: 'plan' | 'apply', payload: object) =>
    h.app.inject({ method: 'POST', url: `/v1/projects/${projectId}/compose/${step}`, headers: owner.headers, payload });
  const body = () => ({ compose, base_dir: dir, env_files: { 'api.env': envFile } });
  const get = async (host: string, path: string) => (await routerGet(localRuntime(h.ctx).router.port, host, path, 30_000)).body;

  async function deployedUrl(applicationId: string): Promise<string> {
    const d = await waitFor(
      'the deployment',
      async () => {
        const list = (
          await h.app.inject({ method: 'GET', url: `/v1/applications/${applicationId}/deployments`, headers: owner.headers })
        ).json();
        const latest = list.items?.[0];
        if (!latest) return null;
        const detail = (await h.app.inject({ method: 'GET', url: `/v1/deployments/${latest.id}/detail`, headers: owner.headers })).json();
        return detail.complete || detail.error ? detail : null;
      },
      180_000,
      250,
    );
    expect(d.complete, JSON.stringify(d)).toBe(true);
    return new URL(d.deploy_metadata.url).hostname;
  }

  beforeAll(async () => {
    const registryPort = await freePort();
    h = await createHarness(
      {
        REGISTRY_URL: `http://127.0.0.1:${registryPort}`,
        REGISTRY_SERVICE: SERVICE,
        ROUTER_HOST: '127.0.0.1',
        ROUTER_PORT: 0,
        RUNTIME_STOP_GRACE_MS: 2000,
      },
      { jobs: true, runtime: true },
    );
    registry = await startRegistryFor(h, { service: SERVICE, port: registryPort });
    owner = await h.user();
    // The registry repository the image is pushed to belongs to an application of the organization.
    const seeded = await seedApplication(h, owner, { org: `Compose ${owner.username}`, project: 'Stack', app: 'Images' });
    orgSlug = seeded.org.slug;
    projectId = seeded.project.id;
    dir = mkdtempSync(join(tmpdir(), 'slipway-compose-'));
    const layout = await makeImageLayout(join(dir, 'image'));
    await run('skopeo', [
      '--insecure-policy',
      'copy',
      '--dest-tls-verify=false',
      '--dest-creds',
      `ci:${owner.apiKey}`,
      `oci:${layout}:v1`,
      `docker://${registry.host}/${orgSlug}/stack/images:v1`,
    ]);
    repo = new TestRepo();
    repo.commit({ 'server.py': SERVER, Procfile: 'web: python3 server.py\n' });
    compose = `services:
  db:
    image: postgres:16
    environment:
      POSTGRES_PASSWORD: example
    volumes:
      - dbdata:/var/lib/postgresql/data
  api:
    build:
      context: ${relative(dir, repo.dir)}
    env_file: api.env
    environment:
      DATABASE_URL: postgres://postgres:example@db:5432/postgres
      GREETING: hello
      API_TOKEN: s3cret
    healthcheck:
      test: ["CMD", "curl", "-f", "http://localhost:8000/"]
      start_period: 45s
    ports:
      - "8000:8000"
    depends_on: [db]
    privileged: true
    networks: [backend]
  front:
    image: ${orgSlug}/stack/images:v1
    command: ["httpd", "-f", "-p", "8080", "-h", "/www/alt"]
    deploy:
      replicas: 1
    volumes:
      - uploads:/data
      - ./static:/srv/static
    depends_on:
      api:
        condition: service_started
    cap_add: [NET_ADMIN]
volumes:
  dbdata: {}
  uploads:
    x-slipway-size: 32M
networks:
  backend: {}
`;
    writeFileSync(join(dir, 'compose.yaml'), compose);
    writeFileSync(join(dir, 'api.env'), envFile);
  }, 120_000);

  afterAll(async () => {
    // The disk goes with its record (unmounted; the harness removes DATA_DIR).
    if (frontId) await h.app.inject({ method: 'DELETE', url: `/v1/applications/${frontId}/volumes/uploads`, headers: owner.headers });
    await h?.close();
    await registry?.stop();
    repo?.remove();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('answers a malformed file with a 422 naming the line, and changes nothing', async () => {
    const bad = await post('plan', { compose: 'services:\n  api:\n    image: a\n    image: b\n' });
    expect(bad.statusCode, bad.body).toBe(422);
    expect(bad.json().message).toMatch(/^compose file, line 4: /);
    const broken = await post('apply', { compose: 'services:\n  api:\n    build: .\n   image: [\n' });
    expect(broken.statusCode, broken.body).toBe(422);
    expect(broken.json().message).toBe('compose file, line 4: All mapping items must start at the same column');
    const cycle = await post('plan', {
      compose: 'services:\n  a:\n    image: x\n    depends_on: [b]\n  b:\n    image: y\n    depends_on: [a]\n',
    });
    expect(cycle.statusCode).toBe(422);
    expect(cycle.json().message).toContain('depends_on makes a cycle');
    const elsewhere = await post('apply', { compose: 'services:\n  x:\n    image: registry.example.com/team/app:1\n' });
    expect(elsewhere.statusCode).toBe(422);
    expect(elsewhere.json().message).toContain('service x: the registry registry.example.com is not one images may be deployed from');
    const many = Array.from({ length: 51 }, (_, i) => `  s${i}:\n    image: x\n`).join('');
    const tooMany = await post('plan', { compose: `services:\n${many}` });
    expect(tooMany.statusCode).toBe(422);
    expect(tooMany.json().message).toBe('compose file, line 2: at most 50 services (this file has 51)');
    const scaled = await post('plan', {
      compose: 'services:\n  x:\n    build: /srv/x\n    volumes: [d:/data]\n    deploy: {replicas: 2}\nvolumes:\n  d: {}\n',
    });
    expect(scaled.statusCode).toBe(422);
    expect(scaled.json().message).toContain(
      'service x: deploy.replicas is 2, but it mounts the volume d, which one instance only can write',
    );
    // A refusal a later write would meet (a build context outside the allowed folders) is met before the first one.
    const outside = await post('apply', {
      compose: `services:\n  first:\n    image: ${orgSlug}/stack/images:v1\n  second:\n    build: /etc\n`,
    });
    expect(outside.statusCode, outside.body).toBe(422);
    expect(outside.json().message).toMatch(/github_repository/);
    const apps = (await h.app.inject({ method: 'GET', url: `/v1/applications/${orgSlug}/stack`, headers: owner.headers })).json();
    expect(apps.map((a: { slug: string }) => a.slug)).toEqual(['images']);
  });

  it('plans every item and lists what it cannot map with the reason', async () => {
    const res = await post('plan', body());
    expect(res.statusCode, res.body).toBe(200);
    const plan = res.json();
    expect(plan.order).toEqual(['db', 'api', 'front']);
    const items = plan.items.map((i: { service: string; resource: string; action: string }) => `${i.service} ${i.resource} ${i.action}`);
    expect(items).toEqual([
      'db addon create',
      'api application create',
      'api source create',
      'api settings create',
      'api variables create',
      'api attachment create',
      'api deploy create',
      'front application create',
      'front source create',
      'front settings create',
      'front scale create',
      'front volume create',
      'front deploy create',
    ]);
    const detail = Object.fromEntries(
      plan.items.map((i: { service: string; resource: string; detail: string }) => [`${i.service} ${i.resource}`, i.detail]),
    );
    expect(detail['api variables']).toBe('SESSION_SECRET (secret), GREETING, API_TOKEN (secret)');
    expect(detail['api attachment']).toBe('stack-db as DATABASE_URL (production)');
    expect(detail['api settings']).toBe('health_check_path=/, health_check_timeout=45');
    expect(detail['api source']).toBe(`built from ${repo.dir}`);
    expect(detail['front settings']).toBe('start_command=httpd -f -p 8080 -h /www/alt');
    expect(detail['front volume']).toBe('uploads at /data, 32 MiB (x-slipway-size) in production');
    // No value of the file (a password above all) appears in the plan.
    expect(res.body).not.toMatch(/s3cret|example|from-env-file/);
    expect(plan.unmapped).toContainEqual(expect.objectContaining({ service: 'db', key: 'environment.POSTGRES_PASSWORD', line: 5 }));
    const unmapped = plan.unmapped.map(
      (u: { service: string | null; key: string; reason: string }) => `${u.service ?? '-'} ${u.key}: ${u.reason}`,
    );
    for (const expected of [
      '- networks: applications reach each other through their URLs',
      'db volumes: dbdata:/var/lib/postgresql/data: the postgres add-on keeps its data',
      'front volumes: ./static:/srv/static: a bind mount: the host’s paths are not the platform’s',
      'db environment.POSTGRES_PASSWORD: the postgres add-on makes its own user, password and database',
      'api ports: 8000:8000: host ports are not published',
      'api privileged: instances never run privileged',
      'api networks: applications reach each other',
      'front cap_add: instances get no added capabilities',
    ])
      expect(
        unmapped.some((u: string) => u.startsWith(expected)),
        `${expected}\nin ${unmapped.join('\n')}`,
      ).toBe(true);
  });

  it('applies: the add-on, both applications deployed, DATABASE_URL wired and used; a re-import changes nothing', async () => {
    const res = await post('apply', body());
    expect(res.statusCode, res.body).toBe(200);
    const applied = res.json();
    expect(applied.deployments.map((d: { service: string }) => d.service)).toEqual(['api', 'front']);
    const ids = Object.fromEntries(
      applied.deployments.map((d: { service: string; application_id: string }) => [d.service, d.application_id]),
    );

    const apiHost = await deployedUrl(ids.api);
    expect(await get(apiHost, '/pg')).toBe('1');
    expect(await get(apiHost, '/pg')).toBe('2');
    expect(await get(apiHost, '/')).toBe('hello True from-env-file');
    const frontHost = await deployedUrl(ids.front);
    // The service's `command` (the application's start command) runs instead of the image's CMD.
    expect(await get(frontHost, '/')).toBe('front from the command\n');

    const vars = (await h.app.inject({ method: 'GET', url: `/v1/configurations/${ids.api}`, headers: owner.headers })).json();
    const byName = Object.fromEntries(vars.map((v: { name: string; secret: boolean }) => [v.name, v.secret]));
    expect(byName).toEqual({ API_TOKEN: true, GREETING: false, SESSION_SECRET: true });
    frontId = ids.front;
    const volumes = (await h.app.inject({ method: 'GET', url: `/v1/applications/${ids.front}/volumes`, headers: owner.headers })).json();
    expect(volumes).toMatchObject([{ name: 'uploads', mount_path: '/data', size_mib: 32, process_type: 'web', environment: 'production' }]);
    const addons = (await h.app.inject({ method: 'GET', url: `/v1/organizations/${orgSlug}/addons`, headers: owner.headers })).json();
    expect(addons).toMatchObject([
      { name: 'stack-db', kind: 'postgres', attachments: [{ application_id: ids.api, variable: 'DATABASE_URL' }] },
    ]);

    // The same file again, by the CLI as a user runs it: nothing new, nothing deployed.
    // startRegistryFor made the harness listen (the registry's token realm).
    const address = `http://127.0.0.1:${(h.app.server.address() as { port: number }).port}`;
    const env = { SLIPWAY_SERVER: address, SLIPWAY_API_KEY: owner.apiKey, HOME: dir };
    const again = await slipway(['compose', 'import', 'compose.yaml', '--project', `${orgSlug}/stack`, '--yes', '--json'], env, {
      cwd: dir,
    });
    expect(again.code, again.stderr).toBe(0);
    const plan = JSON.parse(again.stdout);
    expect(plan.changes).toBe(0);
    expect(plan.items.every((i: { action: string }) => i.action === 'unchanged')).toBe(true);
    const human = await slipway(['compose', 'import', 'compose.yaml', '--project', `${orgSlug}/stack`], env, { cwd: dir });
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toContain('= api: attachment stack-db as DATABASE_URL (production) (unchanged)');
    expect(human.stdout).toContain('! api.privileged (line 22): instances never run privileged');
    expect(human.stdout).toContain('Nothing to change.');
    const reapplied = await post('apply', body());
    expect(reapplied.json().deployments).toEqual([]);
    const apps = (await h.app.inject({ method: 'GET', url: `/v1/applications/${orgSlug}/stack`, headers: owner.headers })).json();
    expect(apps.map((a: { slug: string }) => a.slug).sort()).toEqual(['api', 'front', 'images']);
    const after = (await h.app.inject({ method: 'GET', url: `/v1/organizations/${orgSlug}/addons`, headers: owner.headers })).json();
    expect(after).toHaveLength(1);

    // A changed file: the CLI shows what changes; without a terminal it applies only with --yes.
    writeFileSync(join(dir, 'compose.yaml'), compose.replace('GREETING: hello', 'GREETING: bonjour'));
    const asks = await slipway(['compose', 'import', 'compose.yaml', '--project', `${orgSlug}/stack`], env, { cwd: dir });
    expect(asks.code).toBe(2);
    expect(asks.stderr).toContain('~ api: variables SESSION_SECRET (secret), GREETING, API_TOKEN (secret)');
    expect(asks.stderr).toContain('pass --yes');
    const changed = await slipway(['compose', 'import', 'compose.yaml', '--project', `${orgSlug}/stack`, '--yes', '--json'], env, {
      cwd: dir,
    });
    expect(changed.code, changed.stderr).toBe(0);
    expect(JSON.parse(changed.stdout).deployments.map((d: { service: string }) => d.service)).toEqual(['api']);
    await waitFor('the new variable served', async () => (await get(apiHost, '/')).startsWith('bonjour'), 120_000, 250);

    // A start command set on the application replaces the Procfile's `web:` with the next release, no build.
    const settings = (start_command: string | null) =>
      h.app.inject({ method: 'PATCH', url: `/v1/applications/${ids.api}/settings`, headers: owner.headers, payload: { start_command } });
    expect((await settings('python3 server.py\nrm -rf /')).statusCode).toBe(422);
    expect((await settings('x'.repeat(4097))).statusCode).toBe(422);
    const start = 'GREETING=started-by-setting exec python3 server.py';
    const set = await slipway(['apps', 'update', `${orgSlug}/stack/api`, '--start-command', start], env, { cwd: dir });
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toMatch(/Start command\s+GREETING=started-by-setting exec python3 server.py/);
    const shown = await h.app.inject({ method: 'GET', url: `/v1/applications/${orgSlug}/stack/api`, headers: owner.headers });
    expect(shown.json().start_command).toBe(start);
    const imageCount = async () =>
      (await h.app.inject({ method: 'GET', url: `/v1/images/${ids.api}`, headers: owner.headers })).json().pagination.total as number;
    const images = await imageCount();
    const released = await h.app.inject({ method: 'POST', url: `/v1/applications/${ids.api}/config-release`, headers: owner.headers });
    expect(released.statusCode, released.body).toBe(202);
    expect(await deployedUrl(ids.api)).toBe(apiHost);
    expect(await get(apiHost, '/')).toBe('started-by-setting True from-env-file');
    const log = (await h.app.inject({ method: 'GET', url: `/v1/releases/${released.json().release_id}/log`, headers: owner.headers })).body;
    expect(log).toContain("web: start command from the application's settings");
    // No build: the release runs on the image already built.
    expect(await imageCount()).toBe(images);
  }, 400_000);
});
