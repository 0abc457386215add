import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../helpers/harness.js';
import { registryPullSecret } from '../../src/platform/crypto/registry-token.js';
import { SigningKeys } from '../../src/platform/crypto/signing-key.js';
import { pullSecretFor, registryHost } from '../../src/platform/builder/registry-target.js';
import { basic, decodeJwt, seedRepository, type Repo } from './fixtures.js';
import { makeOciLayout, missingBinary, run, startRegistry, type RegistryServer } from './registry-server.js';

const SERVICE = 'slipway-registry';
const ISSUER = 'slipway';
const AUTH = '/v1/integrations/docker/auth';
const HOST = '127.0.0.1:5999';

let h: Harness;
let repo: Repo;
let otherRepo: Repo;
let keys: SigningKeys;
let scratch: string;

beforeAll(async () => {
  h = await createHarness({ REGISTRY_SERVICE: SERVICE, TOKEN_ISSUER: ISSUER, REGISTRY_URL: `http://${HOST}` });
  repo = await seedRepository(h);
  otherRepo = await seedRepository(h);
  keys = SigningKeys.forConfig(h.ctx.config);
  scratch = mkdtempSync(join(tmpdir(), 'slipway-pull-secret-'));
});
afterAll(async () => {
  await h?.close();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** The `.dockerconfigjson` entry for the registry host, as a kubelet reads it. */
function credentialsOf(dockerConfigJson: string, host = HOST) {
  const entry = JSON.parse(dockerConfigJson).auths[host] as { username: string; password: string; auth: string };
  expect(Buffer.from(entry.auth, 'base64').toString()).toBe(`${entry.username}:${entry.password}`);
  return entry;
}

/** The kubelet's call: GET the token endpoint with the pull secret's Basic credentials. */
const tokenFor = (password: string, scope: string, username = 'slipway-pull') =>
  h.app.inject({
    method: 'GET',
    url: `${AUTH}?service=${SERVICE}&scope=${encodeURIComponent(scope)}`,
    headers: { authorization: basic(username, password) },
  });

async function grantedAccess(password: string, scope: string) {
  const res = await tokenFor(password, scope);
  expect(res.statusCode, res.body).toBe(200);
  return decodeJwt(res.json().token).claims.access as Array<{ name: string; actions: string[] }>;
}

describe('pullSecretFor', () => {
  it("makes a .dockerconfigjson for the configured registry host, pull-only on the plan's repository", async () => {
    expect(registryHost(h.ctx.config)).toBe(HOST);
    const secret = await pullSecretFor(h.ctx.config)({ image: { repositoryName: repo.name } });
    expect(secret).not.toBeNull();
    const entry = credentialsOf(secret!);
    expect(entry.username).toBe('slipway-pull');
    const { claims } = decodeJwt(entry.password);
    expect(claims.grant).toEqual([{ type: 'repository', name: repo.name, actions: ['pull'] }]);
    expect(claims.exp - claims.iat).toBe(30 * 86400);
    expect(claims.aud).not.toBe(SERVICE); // never usable as a registry access token itself
  });

  it('honours a shorter lifetime', async () => {
    const secret = await pullSecretFor(h.ctx.config, { ttlSeconds: 600 })({ image: { repositoryName: repo.name } });
    const { claims } = decodeJwt(credentialsOf(secret!).password);
    expect(claims.exp - claims.iat).toBe(600);
  });

  it('is null without REGISTRY_URL', async () => {
    const config = { ...h.ctx.config, REGISTRY_URL: undefined };
    expect(registryHost(config)).toBeNull();
    expect(await pullSecretFor(config)({ image: { repositoryName: repo.name } })).toBeNull();
  });
});

describe("token endpoint with a pull secret's Basic credentials", () => {
  let password: string;
  beforeAll(async () => {
    password = credentialsOf((await pullSecretFor(h.ctx.config)({ image: { repositoryName: repo.name } }))!).password;
  });

  it('grants pull on its repository, to subject slipway-pull, with no refresh token', async () => {
    const res = await h.app.inject({
      method: 'GET',
      url: `${AUTH}?service=${SERVICE}&scope=repository:${repo.name}:pull&offline_token=true`,
      headers: { authorization: basic('slipway-pull', password) },
    });
    expect(res.statusCode, res.body).toBe(200);
    const { claims } = decodeJwt(res.json().token);
    expect(claims.sub).toBe('slipway-pull');
    expect(claims.aud).toBe(SERVICE);
    expect(claims.access).toEqual([{ type: 'repository', name: repo.name, actions: ['pull'] }]);
    expect(res.json().scope).toBe(`repository:${repo.name}:pull`);
    expect(res.json().refresh_token).toBeUndefined();
  });

  it('does not grant push or delete', async () => {
    expect(await grantedAccess(password, `repository:${repo.name}:push`)).toEqual([{ type: 'repository', name: repo.name, actions: [] }]);
    expect(await grantedAccess(password, `repository:${repo.name}:pull,push,delete`)).toEqual([
      { type: 'repository', name: repo.name, actions: ['pull'] },
    ]);
  });

  it('does not grant another repository', async () => {
    expect(await grantedAccess(password, `repository:${otherRepo.name}:pull`)).toEqual([
      { type: 'repository', name: otherRepo.name, actions: [] },
    ]);
  });

  it('refuses a refresh token signed for another service (the registry service is checked)', async () => {
    const foreign = await registryPullSecret(keys, { issuer: ISSUER, service: 'other-service', registryHost: HOST, repository: repo.name });
    const res = await tokenFor(credentialsOf(foreign).password, `repository:${repo.name}:pull`);
    expect(res.statusCode).toBe(401);
  });

  it('answers 401 with a Basic challenge for an expired pull secret', async () => {
    const expired = await registryPullSecret(keys, {
      issuer: ISSUER,
      service: SERVICE,
      registryHost: HOST,
      repository: repo.name,
      ttlSeconds: 3600,
      now: new Date(Date.now() - 2 * 3600_000),
    });
    const res = await tokenFor(credentialsOf(expired).password, `repository:${repo.name}:pull`);
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toMatch(/^Basic /);
  });

  it('answers 401 for a token forged with another key, even one claiming our key id', async () => {
    const otherDir = mkdtempSync(join(scratch, 'other-key-'));
    const otherKeys = SigningKeys.forConfig({ ...h.ctx.config, dataDir: otherDir });
    const forged = await registryPullSecret(otherKeys, { issuer: ISSUER, service: SERVICE, registryHost: HOST, repository: repo.name });
    expect((await tokenFor(credentialsOf(forged).password, `repository:${repo.name}:pull`)).statusCode).toBe(401);

    const ours = await keys.current();
    const other = await otherKeys.current();
    const now = Math.floor(Date.now() / 1000);
    const impostor = await new SignJWT({ grant: [{ type: 'repository', name: repo.name, actions: ['pull', 'push'] }] })
      .setProtectedHeader({ alg: other.alg, typ: 'JWT', kid: ours.kid })
      .setIssuer(ISSUER)
      .setSubject('slipway-pull')
      .setAudience(`${SERVICE}#refresh`)
      .setIssuedAt(now)
      .setExpirationTime(now + 600)
      .sign(other.privateKey);
    expect((await tokenFor(impostor, `repository:${repo.name}:pull`)).statusCode).toBe(401);
  });

  it('answers 401 for a registry access token or a malformed JWT used as the password', async () => {
    const access = await tokenFor(password, `repository:${repo.name}:pull`);
    expect((await tokenFor(access.json().token, `repository:${repo.name}:pull`)).statusCode).toBe(401);
    expect((await tokenFor('a.b.c', `repository:${repo.name}:pull`)).statusCode).toBe(401);
  });

  it("keeps a user's refresh token tied to its API key, without minting another refresh token", async () => {
    const user = await h.user();
    const mine = await seedRepository(h, user);
    const login = await h.app.inject({
      method: 'GET',
      url: `${AUTH}?service=${SERVICE}&offline_token=true`,
      headers: { authorization: basic('u', user.apiKey) },
    });
    const refreshToken = login.json().refresh_token as string;
    expect(refreshToken).toEqual(expect.any(String));

    const res = await h.app.inject({
      method: 'GET',
      url: `${AUTH}?service=${SERVICE}&offline_token=true&scope=repository:${mine.name}:pull,push`,
      headers: { authorization: basic(user.username, refreshToken) },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(decodeJwt(res.json().token).claims.access).toEqual([{ type: 'repository', name: mine.name, actions: ['pull', 'push'] }]);
    expect(res.json().refresh_token).toBeUndefined();

    await h.ctx.db.deleteFrom('api_keys').where('user_id', '=', user.id).execute();
    expect((await tokenFor(refreshToken, `repository:${mine.name}:pull`)).statusCode).toBe(401);
  });

  it('never logs the pull secret', () => {
    expect(h.logs()).not.toContain(password);
    expect(h.logs()).not.toContain(Buffer.from(`slipway-pull:${password}`).toString('base64'));
  });
});

const missing = missingBinary({ 'docker-registry': 'docker-registry', skopeo: 'skopeo', tar: 'tar' });
if (missing) console.warn(`[test/registry] skipping the pull-secret registry test: ${missing}`);

describe.skipIf(!!missing)('a real registry pulled from with a pull secret, as a kubelet would', () => {
  let rh: Harness;
  let registry: RegistryServer;
  let work: string;
  let pushRepo: Repo;

  /** skopeo resolving to {ok, output} instead of throwing. */
  async function skopeo(args: string[]) {
    try {
      const { stdout, stderr } = await run('skopeo', ['--insecure-policy', ...args], { timeout: 60_000 });
      return { ok: true, output: stdout + stderr };
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string; message: string };
      return { ok: false, output: `${e.stdout ?? ''}${e.stderr ?? ''}${e.message}` };
    }
  }

  beforeAll(async () => {
    rh = await createHarness({ REGISTRY_SERVICE: SERVICE, TOKEN_ISSUER: ISSUER });
    await rh.app.listen({ port: 0, host: '127.0.0.1' });
    const port = (rh.app.server.address() as { port: number }).port;
    const cert = (await rh.app.inject({ method: 'GET', url: '/v1/integrations/signing-cert' })).json().certificate;
    registry = await startRegistry({ realm: `http://127.0.0.1:${port}${AUTH}`, service: SERVICE, issuer: ISSUER, rootCertBundle: cert });
    pushRepo = await seedRepository(rh);
    work = mkdtempSync(join(tmpdir(), 'slipway-pull-secret-registry-'));
    const layout = await makeOciLayout(work, 'v1', { 'hello.txt': 'pulled with a pull secret\n' });
    const push = await skopeo([
      'copy',
      '--dest-tls-verify=false',
      '--dest-creds',
      `anyone:${pushRepo.owner.apiKey}`,
      `oci:${layout}:v1`,
      `docker://${registry.host}/${pushRepo.name}:v1`,
    ]);
    expect(push.ok, push.output).toBe(true);
  }, 60_000);

  afterAll(async () => {
    await registry?.stop();
    await rh?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it("inspects and copies the image with the secret's credentials, and refuses a push with them", async () => {
    const secret = await pullSecretFor({ ...rh.ctx.config, REGISTRY_URL: `http://${registry.host}` })({
      image: { repositoryName: pushRepo.name },
    });
    const { username, password } = credentialsOf(secret!, registry.host);
    const creds = `${username}:${password}`;
    const image = `docker://${registry.host}/${pushRepo.name}:v1`;

    const inspect = await skopeo(['inspect', '--tls-verify=false', '--creds', creds, image]);
    expect(inspect.ok, inspect.output).toBe(true);
    expect(JSON.parse(inspect.output.slice(0, inspect.output.lastIndexOf('}') + 1)).Name).toBe(`${registry.host}/${pushRepo.name}`);

    const copy = await skopeo(['copy', '--src-tls-verify=false', '--src-creds', creds, image, `dir:${join(work, 'pulled')}`]);
    expect(copy.ok, copy.output).toBe(true);

    const push = await skopeo([
      'copy',
      '--src-tls-verify=false',
      '--dest-tls-verify=false',
      '--src-creds',
      creds,
      '--dest-creds',
      creds,
      image,
      `docker://${registry.host}/${pushRepo.name}:evil`,
    ]);
    expect(push.ok).toBe(false);
    expect(push.output).toMatch(/unauthorized|authentication required|denied/i);

    const tags = await skopeo([
      'list-tags',
      '--tls-verify=false',
      '--creds',
      `anyone:${pushRepo.owner.apiKey}`,
      `docker://${registry.host}/${pushRepo.name}`,
    ]);
    expect(tags.ok, tags.output).toBe(true);
    expect(JSON.parse(tags.output.slice(0, tags.output.lastIndexOf('}') + 1)).Tags).toEqual(['v1']);
  }, 120_000);

  it('refuses pulling another repository with the secret', async () => {
    const other = await seedRepository(rh);
    const secret = await pullSecretFor({ ...rh.ctx.config, REGISTRY_URL: `http://${registry.host}` })({
      image: { repositoryName: other.name },
    });
    const { username, password } = credentialsOf(secret!, registry.host);
    const inspect = await skopeo([
      'inspect',
      '--tls-verify=false',
      '--creds',
      `${username}:${password}`,
      `docker://${registry.host}/${pushRepo.name}:v1`,
    ]);
    expect(inspect.ok).toBe(false);
    expect(inspect.output).toMatch(/unauthorized|authentication required|denied/i);
  }, 60_000);
});
