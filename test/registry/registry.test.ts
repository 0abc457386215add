import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { rotateSigningKey, SigningKeys } from '../../src/platform/crypto/signing-key.js';
import { signAccessToken } from '../../src/platform/crypto/registry-token.js';
import { addMember, seedRepository, type Repo } from './fixtures.js';
import { makeOciLayout, missingBinary, run, startRegistry, type RegistryServer } from './registry-server.js';

const missing = missingBinary({ 'docker-registry': 'docker-registry', skopeo: 'skopeo', tar: 'tar' });
if (missing) console.warn(`[test/registry] skipping the real-registry tests: ${missing}`);

const SERVICE = 'slipway-registry';
const ISSUER = 'slipway';

let h: Harness;
let registry: RegistryServer;
let repo: Repo;
let member: TestUser;
let stranger: TestUser;
let work: string;
let layout: string;
let realm: string;

async function bundle(): Promise<string> {
  const res = await h.app.inject({ method: 'GET', url: '/v1/integrations/signing-cert' });
  return res.json().certificate;
}

/** skopeo with loopback http registries allowed; resolves to {ok, output} instead of throwing. */
async function skopeo(args: string[], stdin?: string) {
  const child = run('skopeo', ['--insecure-policy', ...args], { timeout: 60_000 });
  if (stdin !== undefined) {
    child.child.stdin!.write(stdin);
    child.child.stdin!.end();
  }
  try {
    const { stdout, stderr } = await child;
    return { ok: true, output: stdout + stderr };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    return { ok: false, output: `${e.stdout ?? ''}${e.stderr ?? ''}${e.message}` };
  }
}

const creds = (user: TestUser) => `anyone:${user.apiKey}`;
const ref = (tag: string, name = repo.name) => `docker://${registry.host}/${name}:${tag}`;

beforeAll(async () => {
  if (missing) return;
  h = await createHarness({ REGISTRY_SERVICE: SERVICE, TOKEN_ISSUER: ISSUER });
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  const port = (h.app.server.address() as { port: number }).port;
  realm = `http://127.0.0.1:${port}/v1/integrations/docker/auth`;
  repo = await seedRepository(h);
  member = await h.user();
  await addMember(h, repo, member);
  stranger = await h.user();
  await seedRepository(h, stranger); // the stranger has an organization of their own, just not this one
  registry = await startRegistry({ realm, service: SERVICE, issuer: ISSUER, rootCertBundle: await bundle() });
  work = mkdtempSync(join(tmpdir(), 'slipway-registry-test-'));
  layout = await makeOciLayout(work, 'v1', { 'hello.txt': 'hello from slipway\n' });
});

afterAll(async () => {
  await registry?.stop();
  await h?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe.skipIf(!!missing)('a real distribution registry with token auth against the platform', () => {
  it('accepts a push by skopeo logged in with an API key', async () => {
    const authfile = join(work, 'auth.json');
    const login = await skopeo(
      ['login', '--tls-verify=false', '--authfile', authfile, '-u', 'anyone', '--password-stdin', registry.host],
      repo.owner.apiKey,
    );
    expect(login.ok, login.output).toBe(true);
    const push = await skopeo(['copy', '--dest-tls-verify=false', '--authfile', authfile, `oci:${layout}:v1`, ref('v1')]);
    expect(push.ok, push.output).toBe(true);
    const tags = await skopeo(['list-tags', '--tls-verify=false', '--creds', creds(repo.owner), ref('v1').replace(/:v1$/, '')]);
    expect(tags.ok, tags.output).toBe(true);
    expect(JSON.parse(tags.output.slice(0, tags.output.lastIndexOf('}') + 1)).Tags).toEqual(['v1']);
  });

  it('lets another member of the organization pull the image, content intact', async () => {
    const dest = join(work, 'pulled');
    const pull = await skopeo(['copy', '--src-tls-verify=false', '--src-creds', creds(member), ref('v1'), `dir:${dest}`]);
    expect(pull.ok, pull.output).toBe(true);
    // skopeo compresses the layer on push; look inside whichever way it is stored.
    const text = (f: string) => {
      const b = readFileSync(join(dest, f));
      return (b[0] === 0x1f && b[1] === 0x8b ? gunzipSync(b) : b).toString('latin1');
    };
    const layerFile = readdirSync(dest).find((f) => /^[0-9a-f]{64}$/.test(f) && text(f).includes('hello from slipway'));
    expect(layerFile).toBeDefined();
  });

  it('refuses pull and push to a key whose user is not in the organization', async () => {
    const pull = await skopeo(['copy', '--src-tls-verify=false', '--src-creds', creds(stranger), ref('v1'), `dir:${join(work, 'stolen')}`]);
    expect(pull.ok).toBe(false);
    expect(pull.output).toMatch(/unauthorized|authentication required|denied/i);
    const push = await skopeo(['copy', '--dest-tls-verify=false', '--dest-creds', creds(stranger), `oci:${layout}:v1`, ref('evil')]);
    expect(push.ok).toBe(false);
    expect(push.output).toMatch(/unauthorized|authentication required|denied/i);
    // Nothing was written: the owner still sees only v1.
    const tags = await skopeo(['list-tags', '--tls-verify=false', '--creds', creds(repo.owner), ref('v1').replace(/:v1$/, '')]);
    expect(tags.output).not.toContain('evil');
  });

  it('refuses a wrong API key at login', async () => {
    const login = await skopeo(
      ['login', '--tls-verify=false', '--authfile', join(work, 'bad.json'), '-u', 'x', '--password-stdin', registry.host],
      'slw_wrong',
    );
    expect(login.ok).toBe(false);
  });

  it('grants a member pull only when pull is all it may do, per action', async () => {
    // A pull-only token cannot push even for a member: the registry checks the action.
    const keys = SigningKeys.forConfig(h.ctx.config);
    const pullOnly = await signAccessToken(keys, {
      issuer: ISSUER,
      service: SERVICE,
      subject: member.username,
      expiresInSeconds: 60,
      access: [{ type: 'repository', name: repo.name, actions: ['pull'] }],
    });
    const upload = await fetch(`http://${registry.host}/v2/${repo.name}/blobs/uploads/`, {
      method: 'POST',
      headers: { authorization: `Bearer ${pullOnly.token}` },
    });
    expect(upload.status).toBe(401);
    const tags = await fetch(`http://${registry.host}/v2/${repo.name}/tags/list`, {
      headers: { authorization: `Bearer ${pullOnly.token}` },
    });
    expect(tags.status).toBe(200);
  });

  it('rejects expired tokens, tokens of unknown keys, and accepts the libtrust kid alone', async () => {
    const keys = SigningKeys.forConfig(h.ctx.config);
    const access = [{ type: 'repository', name: repo.name, actions: ['pull'] }];
    const tagsWith = (token: string) =>
      fetch(`http://${registry.host}/v2/${repo.name}/tags/list`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.status);

    const fresh = await signAccessToken(keys, { issuer: ISSUER, service: SERVICE, subject: 'u', access, expiresInSeconds: 300 });
    expect(await tagsWith(fresh.token)).toBe(200);

    // Expired well beyond the registry's clock-skew leeway.
    const expired = await signAccessToken(keys, {
      issuer: ISSUER,
      service: SERVICE,
      subject: 'u',
      access,
      expiresInSeconds: 300,
      now: new Date(Date.now() - 20 * 60_000),
    });
    expect(await tagsWith(expired.token)).toBe(401);

    const wrongAudience = await signAccessToken(keys, {
      issuer: ISSUER,
      service: 'other-registry',
      subject: 'u',
      access,
      expiresInSeconds: 300,
    });
    expect(await tagsWith(wrongAudience.token)).toBe(401);

    // Only the kid, no x5c: the registry finds the key by libtrust id in its root bundle.
    const key = await keys.current();
    const kidOnly = await new SignJWT({ access })
      .setProtectedHeader({ alg: key.alg, typ: 'JWT', kid: key.kid })
      .setIssuer(ISSUER)
      .setAudience(SERVICE)
      .setSubject('u')
      .setIssuedAt()
      .setNotBefore('0s')
      .setExpirationTime('5m')
      .setJti('kid-only')
      .sign(key.privateKey);
    expect(await tagsWith(kidOnly)).toBe(200);

    // Same kid, a key the registry does not trust.
    const rogue = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    const forged = await new SignJWT({ access })
      .setProtectedHeader({ alg: 'ES256', typ: 'JWT', kid: key.kid })
      .setIssuer(ISSUER)
      .setAudience(SERVICE)
      .setSubject('u')
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(rogue);
    expect(await tagsWith(forged)).toBe(401);
  });

  it('after a key rotation, a registry given the served bundle accepts tokens of the old and the new key', async () => {
    const get = async (user: TestUser) => {
      const res = await fetch(`${realm}?service=${SERVICE}&scope=repository:${repo.name}:pull`, {
        headers: { authorization: `Basic ${Buffer.from(`x:${user.apiKey}`).toString('base64')}` },
      });
      expect(res.status).toBe(200);
      return (await res.json()).token as string;
    };
    const before = await get(member);
    await rotateSigningKey(h.ctx.config);
    const after = await get(member);
    const rotated = await startRegistry({ realm, service: SERVICE, issuer: ISSUER, rootCertBundle: await bundle() });
    try {
      for (const token of [before, after]) {
        const res = await fetch(`http://${rotated.host}/v2/`, { headers: { authorization: `Bearer ${token}` } });
        expect(res.status).toBe(200);
      }
      // The registry started before the rotation does not know the new key yet.
      const stale = await fetch(`http://${registry.host}/v2/`, { headers: { authorization: `Bearer ${after}` } });
      expect(stale.status).toBe(401);
    } finally {
      await rotated.stop();
    }
  });

  it('keeps API keys out of the server log', () => {
    const logs = h.logs();
    for (const user of [repo.owner, member, stranger]) expect(logs).not.toContain(user.apiKey);
  });
});
