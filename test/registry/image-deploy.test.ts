import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../helpers/harness.js';
import { routerGet } from '../helpers/router-get.js';
import { waitFor } from '../helpers/wait.js';
import { createApp, type TestApp } from '../pipeline-build/fixtures.js';
import { settled } from '../pipeline-deploy/fixtures.js';
import { slipway } from '../cli/slipway.js';
import { makeImageLayout } from './base-image.js';
import { freePort, missingBinary, run, startRegistry, startRegistryFor, type RegistryServer } from './registry-server.js';

const missing = missingBinary({
  buildah: 'buildah',
  'docker-registry': 'docker-registry',
  skopeo: 'skopeo',
  busybox: 'busybox-static',
});
if (missing) console.warn(`[test/registry] skipping the image deploy test: ${missing}`);

const SERVICE = 'slipway-registry';
let h: Harness;
let registry: RegistryServer;
/** A second registry the operator allows (IMAGE_PULL_REGISTRIES): pulled with the member's own credentials. */
let allowed: RegistryServer;
let t: TestApp;
let other: TestApp;
let scratch: string;
let repository: string;

beforeAll(async () => {
  if (missing) return;
  const registryPort = await freePort();
  const allowedPort = await freePort();
  h = await createHarness(
    {
      REGISTRY_URL: `http://127.0.0.1:${registryPort}`,
      IMAGE_PULL_REGISTRIES: `http://127.0.0.1:${allowedPort}`,
      REGISTRY_SERVICE: SERVICE,
      ROUTER_HOST: '127.0.0.1',
      ROUTER_PORT: 0,
      RUNTIME_STOP_GRACE_MS: 2000,
    },
    { jobs: true, runtime: true },
  );
  registry = await startRegistryFor(h, { service: SERVICE, port: registryPort });
  // Another operator's registry in all but name: its token service happens to be this platform's, so an API key is a credential there.
  allowed = await startRegistry({
    realm: `${await serverUrl()}/v1/integrations/docker/auth`,
    service: SERVICE,
    issuer: 'slipway',
    rootCertBundle: (await h.app.inject({ method: 'GET', url: '/v1/integrations/signing-cert' })).json().certificate,
    port: allowedPort,
  });
  t = await createApp(h);
  other = await createApp(h);
  repository = `${t.orgSlug}/shop/web`; // createApp's project and application
  scratch = mkdtempSync(join(tmpdir(), 'slipway-image-deploy-'));
  const layout = await makeImageLayout(scratch);
  // Pushed as a member would from CI: skopeo with an API key as the password (a scoped registry token).
  await run('skopeo', [
    '--insecure-policy',
    'copy',
    '--dest-tls-verify=false',
    '--dest-creds',
    `ci:${t.user.apiKey}`,
    `oci:${layout}:v1`,
    `docker://${registry.host}/${repository}:v1`,
  ]);
  await run('skopeo', [
    '--insecure-policy',
    'copy',
    '--dest-tls-verify=false',
    '--dest-creds',
    `ci:${t.user.apiKey}`,
    `oci:${layout}:v1`,
    `docker://${allowed.host}/${repository}:v1`,
  ]);
}, 120_000);

afterAll(async () => {
  await h?.close();
  await registry?.stop();
  await allowed?.stop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

const deploy = (app: TestApp, payload: Record<string, unknown>) =>
  h.app.inject({ method: 'POST', url: `/v1/applications/${app.appId}/deploy`, headers: app.user.headers, payload });

describe.skipIf(!!missing)('deploying a pushed image', () => {
  it('refuses an unknown image, another organization repository and a registry not allowed, storing nothing', async () => {
    const unknown = await deploy(t, { image: `${registry.host}/${repository}:nope` });
    expect(unknown.statusCode, unknown.body).toBe(404);
    expect(unknown.json().message).toContain('has no such tag');

    const foreign = await deploy(other, { image: `${registry.host}/${repository}:v1` });
    expect(foreign.statusCode, foreign.body).toBe(403);
    expect(foreign.json().message).toContain(`is not a repository of the organization ${other.orgSlug}`);

    const elsewhere = await deploy(t, { image: 'registry.example.com/team/app:1' });
    expect(elsewhere.statusCode, elsewhere.body).toBe(422);
    expect(elsewhere.json().message).toContain(
      `the registry registry.example.com is not one images may be deployed from; allowed: ${registry.host}`,
    );

    const malformed = await deploy(t, { image: 'Not An Image' });
    expect(malformed.statusCode).toBe(422);

    const images = await h.app.inject({ method: 'GET', url: `/v1/images/${t.appId}`, headers: t.user.headers });
    expect(images.json().items).toEqual([]);
  });

  it('deploys the pushed image by reference (CLI), pinned by digest, on its EXPOSE port, served through the edge', async () => {
    const cli = await slipway(['deploy', '--image', `${repository}:v1`, '--app', repository, '--wait', '--json'], {
      HOME: scratch,
      SLIPWAY_SERVER: await serverUrl(),
      SLIPWAY_API_KEY: t.user.apiKey,
    });
    expect(cli.code, cli.stderr).toBe(0);
    const result = JSON.parse(cli.stdout);
    expect(result.image).toMatch(new RegExp(`^${registry.host.replace(/\./g, '\\.')}/${repository}@sha256:[0-9a-f]{64}$`));
    expect(cli.stderr).toContain('Builder: image (no build');

    const image = (await h.app.inject({ method: 'GET', url: `/v1/images/${result.image_id}/detail`, headers: t.user.headers })).json();
    expect(image.image_metadata).toMatchObject({
      builder: 'image',
      source_image: result.image,
      port: 8080,
      user: '1000:1000',
      labels: { 'org.opencontainers.image.title': 'pushed' },
      manifest_digest: result.image.split('@')[1],
    });
    expect(image.processes).toEqual({ web: { cmd: 'httpd -f -p 8080 -h /www', env: {} }, worker: { cmd: 'sleep 3600', env: {} } });
    const log = (await h.app.inject({ method: 'GET', url: `/v1/images/${result.image_id}/log`, headers: t.user.headers })).json();
    expect(log.log_text).toContain('The web process listens on 8080 (EXPOSE): PORT=8080');
    expect(log.log_text).toContain('Processes run as uid 1000, gid 1000 (USER 1000:1000)');

    const d = await settled(h, t.user, result.deployment_id, 60_000);
    expect(d.status, d.deploy_log).toBe('complete');
    const url = new URL(d.deploy_metadata.url);
    expect(result.url).toBe(d.deploy_metadata.url);
    const served = await waitFor('the image served', async () => {
      const r = await routerGet(Number(url.port), url.hostname);
      return r.status === 200 ? r : null;
    });
    expect(served).toEqual({ status: 200, body: 'hello from a pushed image\n' });
  });
});

describe.skipIf(!!missing)('an image from a registry the operator allows', () => {
  it('is looked up and pulled with the credentials given, which are kept sealed and never shown', async () => {
    const image = `${allowed.host}/${repository}:v1`;
    const wrong = await deploy(t, { image, credentials: { username: 'ci', password: 'not-a-key' } });
    expect(wrong.statusCode, wrong.body).toBe(404);
    expect(wrong.json().message).toContain('or these credentials cannot read it');

    const accepted = await deploy(t, { image, credentials: { username: 'ci', password: t.user.apiKey } });
    expect(accepted.statusCode, accepted.body).toBe(202);
    const { image_id } = accepted.json();
    const log = await waitFor('the pull', async () => {
      const r = (await h.app.inject({ method: 'GET', url: `/v1/images/${image_id}/log`, headers: t.user.headers })).json();
      return r.status === 'building' ? null : r;
    });
    expect(log.status, log.log_text).toBe('built');
    expect(log.log_text).toContain(`Pulling ${allowed.host}/${repository}@sha256:`);
    const detail = await h.app.inject({ method: 'GET', url: `/v1/images/${image_id}/detail`, headers: t.user.headers });
    expect(detail.body).not.toContain(t.user.apiKey);
    const row = await h.ctx.db.selectFrom('images').select('source_credentials').where('id', '=', image_id).executeTakeFirstOrThrow();
    expect(row.source_credentials).toBeTruthy();
    expect(row.source_credentials).not.toContain(t.user.apiKey);
    expect(JSON.parse(h.ctx.secrets.open(row.source_credentials!))).toEqual({ username: 'ci', password: t.user.apiKey });
  });
});

let listening: string | null = null;
async function serverUrl() {
  if (!listening) {
    // startRegistryFor already made the harness listen (the registry's token realm).
    const address = h.app.server.address() as { port: number };
    listening = `http://127.0.0.1:${address.port}`;
  }
  return listening;
}
