import { X509Certificate } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { generateSigningKeyPem, libtrustKeyId, rotateSigningKey } from '../../src/platform/crypto/signing-key.js';
import { addMember, basic, decodeJwt, seedRepository, type Repo } from './fixtures.js';

let h: Harness;
let repo: Repo;
let otherRepo: Repo;
let stranger: TestUser;
const AUTH = '/v1/integrations/docker/auth';

beforeAll(async () => {
  h = await createHarness();
  repo = await seedRepository(h);
  otherRepo = await seedRepository(h);
  stranger = await h.user();
});
afterAll(async () => {
  await h?.close();
});

const get = (query: string, authorization?: string) =>
  h.app.inject({ method: 'GET', url: `${AUTH}${query}`, headers: authorization ? { authorization } : {} });

async function certificatePem() {
  const res = await h.app.inject({ method: 'GET', url: '/v1/integrations/signing-cert' });
  expect(res.statusCode).toBe(200);
  return res.json() as { certificate: string; key_id: string };
}

describe('GET /integrations/docker/auth credentials', () => {
  it('answers 401 with a Basic challenge without credentials', async () => {
    const res = await get('?service=slipway-registry');
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toMatch(/^Basic realm="/);
    expect(res.json()).toMatchObject({ status: 401, message: expect.any(String) });
  });

  it.each([
    ['a wrong API key', basic('anyone', 'slw_not-a-key')],
    ['an empty password', basic('anyone', '')],
    ['no colon in the credentials', `Basic ${Buffer.from('just-a-user').toString('base64')}`],
    ['a Bearer scheme', 'Bearer something'],
    ['garbage', 'Basic %%%'],
  ])('answers 401 with a challenge for %s', async (_what, authorization) => {
    const res = await get('?service=slipway-registry', authorization);
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toMatch(/^Basic /);
  });

  it('accepts any username with an API key, and an X-API-Key header alone is not enough', async () => {
    const ok = await get('?service=slipway-registry', basic('whatever-name', repo.owner.apiKey));
    expect(ok.statusCode).toBe(200);
    const headerOnly = await h.app.inject({ method: 'GET', url: `${AUTH}?service=slipway-registry`, headers: repo.owner.headers });
    expect(headerOnly.statusCode).toBe(401);
  });

  it('refuses an expired API key', async () => {
    const user = await h.user();
    await h.ctx.db
      .updateTable('api_keys')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('user_id', '=', user.id)
      .execute();
    const res = await get('', basic('u', user.apiKey));
    expect(res.statusCode).toBe(401);
  });

  it('refuses a service other than the configured registry', async () => {
    const res = await get('?service=someone-else', basic('u', repo.owner.apiKey));
    expect(res.statusCode).toBe(400);
  });
});

describe('token contents', () => {
  it('is a signed JWT the served certificate verifies, with a libtrust kid and x5c', async () => {
    const res = await get(`?service=slipway-registry&scope=repository:${repo.name}:pull,push`, basic('u', repo.owner.apiKey));
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.token).toBe(body.access_token);
    expect(body.expires_in).toBe(300);
    expect(Math.abs(Date.parse(body.issued_at) - Date.now())).toBeLessThan(5000);
    expect(body.refresh_token).toBeUndefined();

    const { certificate, key_id } = await certificatePem();
    const cert = new X509Certificate(certificate);
    const { payload, protectedHeader } = await jwtVerify(body.token, cert.publicKey, { issuer: 'slipway', audience: 'slipway-registry' });
    expect(protectedHeader.alg).toBe('ES256');
    expect(protectedHeader.kid).toBe(key_id);
    expect(protectedHeader.kid).toMatch(/^([A-Z2-7]{4}:){11}[A-Z2-7]{4}$/);
    expect(protectedHeader.x5c).toEqual([cert.raw.toString('base64')]);
    expect(payload.sub).toBe(repo.owner.username);
    expect(payload.exp! - payload.iat!).toBe(300);
    expect(payload.access).toEqual([{ type: 'repository', name: repo.name, actions: ['pull', 'push'] }]);
  });

  it('grants each of several scope parameters separately', async () => {
    const q = [
      `scope=repository:${repo.name}:pull`,
      `scope=repository:${otherRepo.name}:pull,push`,
      `scope=repository:${repo.name}:push,delete,*`,
      'scope=registry:catalog:*',
    ].join('&');
    const res = await get(`?service=slipway-registry&${q}`, basic('u', repo.owner.apiKey));
    expect(res.statusCode).toBe(200);
    const { claims } = decodeJwt(res.json().token);
    expect(claims.access).toEqual([
      { type: 'repository', name: repo.name, actions: ['pull', 'push', 'delete'] },
      { type: 'repository', name: otherRepo.name, actions: [] },
      { type: 'registry', name: 'catalog', actions: [] },
    ]);
    expect(res.json().scope).toBe(`repository:${repo.name}:pull,push,delete`);
  });

  it('grants nothing on unknown or malformed repositories', async () => {
    const [org, project] = repo.name.split('/');
    const names = [
      `${org}/${project}/nope`,
      `${org}/nope/api`,
      `nope/${project}/api`,
      `${repo.name}/extra`,
      `${org}/${project}`,
      'UPPER/Case/Name',
    ];
    const q = names.map((n) => `scope=${encodeURIComponent(`repository:${n}:pull,push`)}`).join('&') + '&scope=nonsense';
    const res = await get(`?${q}`, basic('u', repo.owner.apiKey));
    expect(res.statusCode).toBe(200);
    const { claims } = decodeJwt(res.json().token);
    expect(claims.access).toEqual(names.map((name) => ({ type: 'repository', name, actions: [] })));
  });

  it('grants a non-member nothing, and a member added later everything', async () => {
    const outsider = await get(`?scope=repository:${repo.name}:pull,push`, basic('u', stranger.apiKey));
    expect(outsider.statusCode).toBe(200);
    expect(decodeJwt(outsider.json().token).claims.access).toEqual([{ type: 'repository', name: repo.name, actions: [] }]);

    const member = await h.user();
    await addMember(h, repo, member);
    const inside = await get(`?scope=repository:${repo.name}:pull,push`, basic('u', member.apiKey));
    expect(decodeJwt(inside.json().token).claims.access).toEqual([{ type: 'repository', name: repo.name, actions: ['pull', 'push'] }]);
  });

  it('issues a login token with no access when no scope is asked for, and a refresh token when offline_token=true', async () => {
    const res = await get('?service=slipway-registry&account=anyone', basic('anyone', repo.owner.apiKey));
    expect(decodeJwt(res.json().token).claims.access).toEqual([]);
    expect(res.json().refresh_token).toBeUndefined();
    const login = await get('?service=slipway-registry&client_id=docker&offline_token=true', basic('anyone', repo.owner.apiKey));
    expect(login.json().refresh_token).toEqual(expect.any(String));
  });

  it('gives two processes starting on one data directory the same key', async () => {
    const { SigningKeys } = await import('../../src/platform/crypto/signing-key.js');
    const dir = mkdtempSync(join(tmpdir(), 'slipway-key-race-'));
    try {
      const config = { ...h.ctx.config, dataDir: dir };
      const [a, b] = [SigningKeys.forConfig(config), SigningKeys.forConfig(config)];
      const [ka, kb] = await Promise.all([a.current(), b.current()]);
      expect(ka.kid).toBe(kb.kid);
      expect(readdirSync(join(dir, 'registry'))).toEqual(['token-signing.pem']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('POST /integrations/docker/auth (OAuth2 form)', () => {
  const post = (form: Record<string, string | string[]>) => {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(form)) for (const one of [v].flat()) params.append(k, one);
    return h.app.inject({
      method: 'POST',
      url: AUTH,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: params.toString(),
    });
  };

  it('issues tokens for grant_type=password with a space-separated scope list, and a refresh token offline', async () => {
    const res = await post({
      grant_type: 'password',
      username: 'x',
      password: repo.owner.apiKey,
      service: 'slipway-registry',
      client_id: 'test',
      access_type: 'offline',
      scope: `repository:${repo.name}:pull repository:${otherRepo.name}:pull`,
    });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(decodeJwt(body.access_token).claims.access).toEqual([
      { type: 'repository', name: repo.name, actions: ['pull'] },
      { type: 'repository', name: otherRepo.name, actions: [] },
    ]);
    expect(body.refresh_token).toEqual(expect.any(String));

    // The refresh token is not an access token for the registry.
    expect(decodeJwt(body.refresh_token).claims.aud).not.toBe('slipway-registry');

    const refreshed = await post({
      grant_type: 'refresh_token',
      refresh_token: body.refresh_token,
      service: 'slipway-registry',
      scope: `repository:${repo.name}:push`,
    });
    expect(refreshed.statusCode, refreshed.body).toBe(200);
    expect(decodeJwt(refreshed.json().access_token).claims.access).toEqual([{ type: 'repository', name: repo.name, actions: ['push'] }]);
  });

  it('refuses bad passwords, bad or revoked refresh tokens and unknown grants', async () => {
    expect((await post({ grant_type: 'password', username: 'x', password: 'slw_wrong' })).statusCode).toBe(401);
    expect((await post({ grant_type: 'password', username: 'x' })).statusCode).toBe(400);
    expect((await post({ grant_type: 'refresh_token', refresh_token: 'a.b.c' })).statusCode).toBe(401);
    expect((await post({ grant_type: 'client_credentials' })).statusCode).toBe(400);

    // A refresh token dies with the API key it came from.
    const user = await h.user();
    const first = await post({ grant_type: 'password', username: 'x', password: user.apiKey, access_type: 'offline' });
    const refreshToken = first.json().refresh_token;
    await h.ctx.db.deleteFrom('api_keys').where('user_id', '=', user.id).execute();
    expect((await post({ grant_type: 'refresh_token', refresh_token: refreshToken })).statusCode).toBe(401);
  });
});

describe("the platform's own push credential", () => {
  it('is an identity token limited to one repository, refused on other services', async () => {
    const { SigningKeys } = await import('../../src/platform/crypto/signing-key.js');
    const { platformAuthFile } = await import('../../src/platform/crypto/registry-token.js');
    const authFile = JSON.parse(
      await platformAuthFile(SigningKeys.forConfig(h.ctx.config), {
        issuer: 'slipway',
        service: 'slipway-registry',
        registryHost: '127.0.0.1:5000',
        repository: repo.name,
      }),
    );
    const identityToken = authFile.auths['127.0.0.1:5000'].identitytoken;
    const form = (scope: string, service = 'slipway-registry') =>
      h.app.inject({
        method: 'POST',
        url: AUTH,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({
          grant_type: 'refresh_token',
          refresh_token: identityToken,
          service,
          client_id: 'buildah',
          scope,
        }).toString(),
      });
    const res = await form(`repository:${repo.name}:pull,push,delete repository:${otherRepo.name}:pull,push`);
    expect(res.statusCode, res.body).toBe(200);
    const { claims } = decodeJwt(res.json().access_token);
    expect(claims.sub).toBe('slipway-builder');
    expect(claims.access).toEqual([
      { type: 'repository', name: repo.name, actions: ['pull', 'push'] },
      { type: 'repository', name: otherRepo.name, actions: [] },
    ]);
    expect(res.json().refresh_token).toBeUndefined();
    expect((await form(`repository:${repo.name}:pull`, 'other-service')).statusCode).toBe(400);
  });
});

describe('signing key', () => {
  it('is generated into the data directory, served as PEM, and rotation keeps the previous certificate', async () => {
    const before = await certificatePem();
    const cert = new X509Certificate(before.certificate);
    expect(cert.ca).toBe(true);
    expect(libtrustKeyId(cert.publicKey.export({ type: 'spki', format: 'der' }))).toBe(before.key_id);

    const oldToken = (await get(`?scope=repository:${repo.name}:pull`, basic('u', repo.owner.apiKey))).json().token;
    const rotated = await rotateSigningKey(h.ctx.config);
    expect(rotated.retiredKid).toBe(before.key_id);

    const after = await certificatePem();
    expect(after.key_id).toBe(rotated.kid);
    const certs = after.certificate.match(/-----BEGIN CERTIFICATE-----/g) ?? [];
    expect(certs).toHaveLength(2);
    // The current certificate comes first (Node parses the first PEM block), the retired one after it.
    expect(libtrustKeyId(new X509Certificate(after.certificate).publicKey.export({ type: 'spki', format: 'der' }))).toBe(rotated.kid);
    expect(after.certificate.endsWith(before.certificate)).toBe(true);

    const newToken = (await get(`?scope=repository:${repo.name}:pull`, basic('u', repo.owner.apiKey))).json().token;
    expect(decodeJwt(newToken).header.kid).toBe(rotated.kid);
    expect(decodeJwt(oldToken).header.kid).toBe(before.key_id);
  });

  it('never logs API keys or tokens', () => {
    const logs = h.logs();
    expect(logs).not.toContain(repo.owner.apiKey);
    expect(logs).not.toContain(Buffer.from(`u:${repo.owner.apiKey}`).toString('base64'));
  });
});

describe('configured signing key', () => {
  it('uses REGISTRY_SIGNING_KEY_FILE as given and refuses to rotate it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'slipway-key-'));
    const keyFile = join(dir, 'signing.pem');
    writeFileSync(keyFile, await generateSigningKeyPem());
    const configured = await createHarness({ REGISTRY_SIGNING_KEY_FILE: keyFile });
    try {
      const res = await configured.app.inject({ method: 'GET', url: '/v1/integrations/signing-cert' });
      expect(res.json().certificate).toBe(
        readFileSync(keyFile, 'utf8').slice(readFileSync(keyFile, 'utf8').indexOf('-----BEGIN CERTIFICATE-----')),
      );
      await expect(rotateSigningKey(configured.ctx.config)).rejects.toThrow(/REGISTRY_SIGNING_KEY_FILE/);
      expect(existsSync(join(configured.dataDir, 'registry'))).toBe(false);
    } finally {
      await configured.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
