import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { TestRepo } from '../helpers/git-repo.js';
import { routerGet } from '../helpers/router-get.js';
import { waitFor } from '../helpers/wait.js';
import { buildAndWait, createApp, setConfig, type TestApp } from '../pipeline-build/fixtures.js';
import { settled } from '../pipeline-deploy/fixtures.js';
import { buildBusyboxBase, BASE_IMAGE } from './base-image.js';
import { freePort, missingBinary, run, startRegistryFor, type RegistryServer } from './registry-server.js';

const missing = missingBinary({
  buildah: 'buildah',
  'docker-registry': 'docker-registry',
  skopeo: 'skopeo',
  busybox: 'busybox-static',
  git: 'git',
});
if (missing) console.warn(`[test/registry] skipping the Dockerfile deploy test: ${missing}`);

const SERVICE = 'slipway-registry';
const SECRET = `tok-${randomBytes(12).toString('hex')}`;
// The RUN step prints the secret on purpose: the pipeline's log must scrub it.
const DOCKERFILE = `FROM ${BASE_IMAGE}
ARG GREETING
RUN --mount=type=secret,id=API_TOKEN echo "token is $(cat /run/secrets/API_TOKEN)" && mkdir -p /www && echo "$GREETING from an image" > /www/index.html
WORKDIR /www
CMD httpd -f -p $PORT -h /www
`;

let h: Harness;
let registry: RegistryServer;
let repo: TestRepo;
let t: TestApp;
let member: TestUser;
let stranger: TestUser;

beforeAll(async () => {
  if (missing) return;
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
  await buildBusyboxBase(join(h.dataDir, 'containers'));
  repo = new TestRepo();
  repo.commit({ Dockerfile: DOCKERFILE });
  t = await createApp(h, { github_repository: repo.dir, auto_deploy_branch: 'main' });
  await setConfig(h, t, 'GREETING', 'hello', { buildtime: true });
  await setConfig(h, t, 'API_TOKEN', SECRET, { secret: true, buildtime: true });
  member = await h.user();
  const added = await h.app.inject({
    method: 'POST',
    url: `/v1/organizations/${t.orgSlug}/members`,
    headers: t.user.headers,
    payload: { username: member.username },
  });
  expect(added.statusCode).toBe(200);
  stranger = await h.user();
});

afterAll(async () => {
  await h?.close();
  await registry?.stop();
  repo?.remove();
});

describe.skipIf(!!missing)('a Dockerfile app through the pipeline', () => {
  it('builds with a build-time secret, pushes, pulls per membership, and deploys behind the router', async () => {
    const started = Date.now();
    const { detail, log } = await buildAndWait(h, t);
    console.log(`[test/registry] pipeline Dockerfile build: ${Date.now() - started} ms`);
    expect(log.status, log.log_text).toBe('built');
    expect(detail.built).toBe(true);
    expect(log.build_step).toEqual({ steps: ['Resolve', 'Build', 'Export', 'Push', 'Done'], current: 4 });
    expect(detail.image_id).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(detail.dockerfile).toBe(DOCKERFILE);
    expect(detail.image_metadata).toMatchObject({ builder: 'buildah', build_args: ['GREETING'], build_secrets: ['API_TOKEN'] });
    expect(detail.image_metadata.registry_reference).toBe(`${registry.host}/${detail.repository_name}:1`);

    // The log: buildah's steps, the secret scrubbed where the RUN step printed it.
    const text: string = log.log_text;
    expect(text).toContain('STEP 3/5');
    expect(text).toContain('token is **secret**');
    expect(text).not.toContain(SECRET);
    expect(JSON.stringify(detail)).not.toContain(SECRET);

    // The registry: another member pulls, a stranger is refused; the image's history has no secret.
    const ref = `docker://${detail.image_metadata.registry_reference}`;
    const inspected = await run('skopeo', [
      '--insecure-policy',
      'inspect',
      '--config',
      '--tls-verify=false',
      '--creds',
      `x:${member.apiKey}`,
      ref,
    ]);
    expect(inspected.stdout).toContain('GREETING');
    expect(inspected.stdout).not.toContain(SECRET);
    await expect(
      run('skopeo', ['--insecure-policy', 'inspect', '--tls-verify=false', '--creds', `x:${stranger.apiKey}`, ref]),
    ).rejects.toThrow(/unauthorized|authentication required|denied/i);

    // Build → release → deploy in one request, as a user would; the rebuild hits the layer cache.
    const chain = await h.app.inject({ method: 'POST', url: `/v1/applications/${t.appId}/deploy`, headers: t.user.headers });
    expect(chain.statusCode, chain.body).toBe(202);
    const deployment = await waitFor(
      "the chain's deployment",
      async () => {
        const list = await h.app.inject({ method: 'GET', url: `/v1/applications/${t.appId}/deployments`, headers: t.user.headers });
        return list.json().items?.[0];
      },
      60_000,
    );
    const d = await settled(h, t.user, deployment.id, 60_000);
    expect(d.status, d.deploy_log).toBe('complete');
    expect(d.deploy_log).not.toContain(SECRET);
    const url = new URL(d.deploy_metadata.url);
    const served = await routerGet(Number(url.port), url.hostname);
    expect(served).toEqual({ status: 200, body: 'hello from an image\n' });
  });
});
