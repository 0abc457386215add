/**
 * Issue 27, class 7 (identity at the edges): the client address is read through the trusted
 * proxy hops only and the audit keeps it beside the socket's peer; refused requests (403)
 * are audited, aggregated; a webhook can't be pointed at loopback or private addresses written
 * as IPv6 that embeds IPv4; the audit keeps a raw hook body as what it says, not as bytes.
 * (Login limits: test/control-plane/auth.test.ts; the CLI's terminal output: test/cli/cli.test.ts.)
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, trustedProxies } from '../../src/config.js';
import { signBody } from '../../src/modules/github/signature.js';
import { isPublicAddress } from '../../src/platform/net/public-address.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { call, expectError, seedWorld } from '../control-plane/fixtures.js';

const HOOK_SECRET = 'identity-edges-hook-secret';

let h: Harness;
let admin: TestUser;

beforeAll(async () => {
  // One proxy in front: its X-Forwarded-For entry is believed, anything a client put before it is not.
  h = await createHarness({ TRUST_PROXY: '1', GITHUB_WEBHOOK_SECRET: HOOK_SECRET });
  admin = await h.user({ admin: true });
});
afterAll(async () => {
  await h?.close();
});

type Entry = {
  action: string;
  actor: { user_id: string | null };
  organization_id: string | null;
  client_address: string | null;
  peer_address: string | null;
  denied: boolean;
  after: Record<string, unknown> | null;
};
const auditOf = async (query: string): Promise<Entry[]> => {
  const r = await call(h, 'GET', `/v1/audit-log?per_page=100&${query}`, admin);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.items;
};

describe('TRUST_PROXY', () => {
  it('takes hops, proxy addresses and CIDRs; refuses anything else at start', () => {
    expect(trustedProxies('false')).toBe(false);
    expect(trustedProxies('true')).toBe(true);
    expect(trustedProxies('2')).toBe(2);
    expect(trustedProxies('10.0.0.1, 192.168.0.0/16,loopback')).toEqual(['10.0.0.1', '192.168.0.0/16', 'loopback']);
    expect(() => loadConfig({}, { TRUST_PROXY: 'yes please' })).toThrow(/TRUST_PROXY/);
    expect(() => loadConfig({}, { TRUST_PROXY: '10.0.0.0/99' })).toThrow(/TRUST_PROXY/);
  });

  it('reads the client through the trusted hop only; the audit keeps client and peer', async () => {
    const owner = await h.user();
    // A client forges an address in front of what the proxy appended.
    const r = await call(
      h,
      'POST',
      '/v1/organizations',
      owner,
      { name: `Proxied ${randomBytes(3).toString('hex')}` },
      {
        'x-forwarded-for': '203.0.113.66, 198.51.100.23',
      },
    );
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const [entry] = (await auditOf(`actor=${owner.id}`)).filter((e) => e.action === 'POST /v1/organizations');
    expect(entry).toMatchObject({ client_address: '198.51.100.23', peer_address: '127.0.0.1', denied: false });
  });

  it('a forged X-Forwarded-For does not dodge the login limits', async () => {
    // Every attempt comes through the same proxy hop for the same client; the forged part is ignored.
    const attempt = (i: number) =>
      h.app.inject({
        method: 'POST',
        url: '/v1/auth/login',
        payload: { email: 'nobody-here@example.com', password: 'wrong' },
        headers: { 'x-forwarded-for': `192.0.2.${i}, 198.51.100.77` },
      });
    for (let i = 0; i < 3; i++) expect((await attempt(i)).statusCode).toBe(401);
    expect((await attempt(9)).statusCode).toBe(429);
  });
});

describe('refused requests (403) in the audit', () => {
  it('records who tried which route of which organization, one row per minute with the repeats counted', async () => {
    const victim = await seedWorld(h);
    const mallory = await h.user();
    // A plain member of the organization tries an admin-only route, again and again.
    const member = await h.user();
    const invited = await call(h, 'POST', `/v1/organizations/${victim.org.slug}/members`, victim.owner, { username: member.username });
    expect(invited.status, JSON.stringify(invited.body)).toBe(200);
    for (let i = 0; i < 5; i++) expectError(await call(h, 'GET', `/v1/organizations/${victim.org.slug}/audit-log`, member), 403);
    // A plain user at the site administrators' audit.
    expectError(await call(h, 'GET', '/v1/audit-log', mallory), 403);

    const entries = await waitForRepeats(member.id);
    // One row (two if a minute turned meanwhile) counting all five.
    expect(entries.length).toBeLessThanOrEqual(2);
    expect(entries.reduce((n, e) => n + 1 + Number(e.after?.repeated ?? 0), 0)).toBe(5);
    for (const entry of entries)
      expect(entry).toMatchObject({
        action: 'GET /v1/organizations/:org_slug/audit-log',
        denied: true,
        organization_id: victim.org.id,
        peer_address: '127.0.0.1',
        after: { status: 403, message: expect.any(String) },
      });
    const site = (await auditOf(`actor=${mallory.id}`)).filter((e) => e.denied);
    expect(site.map((e) => e.action)).toEqual(['GET /v1/audit-log']);
  });
});

async function waitForRepeats(userId: string): Promise<Entry[]> {
  const end = Date.now() + 15_000;
  for (;;) {
    const entries = (await auditOf(`actor=${userId}`)).filter((e) => e.denied);
    if (entries.reduce((n, e) => n + 1 + Number(e.after?.repeated ?? 0), 0) >= 5 || Date.now() > end) return entries;
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe('webhook addresses written as IPv6 embedding IPv4', () => {
  const refused = [
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::127.0.0.1',
    '::7f00:1',
    '::ffff:0:7f00:1',
    '64:ff9b::7f00:1',
    '64:ff9b::a00:1',
    '64:ff9b:1::a00:1',
    '2002:7f00:1::1',
    '2002:a9fe:a9fe::',
    '2001:0:4136:e378:8000:63bf:80ff:fffe',
    'fe80::1',
    'fe80::1%eth0',
    'fc00::1',
    'fd12:3456::1',
    'fec0::1',
    '::1',
    '::',
    '::ffff:169.254.169.254',
    '::ffff:100.64.0.1',
  ];

  it('are judged as the IPv4 address they carry', () => {
    for (const address of refused) expect(isPublicAddress(address), address).toBe(false);
    for (const address of ['8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1'])
      expect(isPublicAddress(address), address).toBe(true);
  });

  it('a webhook to any of them is refused (422) and nothing is saved', async () => {
    const w = await seedWorld(h);
    const base = `/v1/organizations/${w.org.slug}/webhooks`;
    for (const address of refused.filter((a) => !a.includes('%'))) {
      const r = await call(h, 'POST', base, w.owner, { url: `http://[${address}]:8080/hook`, events: ['deployment.succeeded'] });
      expectError(r, 422);
      expect(r.body.message, address).toMatch(/public host/);
    }
    expect((await call(h, 'GET', base, w.owner)).body).toEqual([]);
  });
});

describe('raw webhook bodies in the audit', () => {
  it('are stored as what they say (parsed JSON, redacted), not as bytes', async () => {
    const raw = JSON.stringify({ zen: 'Practicality beats purity.', hook_id: 42, hook: { config: { secret: 'not-for-the-audit' } } });
    const delivery = randomBytes(8).toString('hex');
    const r = await h.app.inject({
      method: 'POST',
      url: '/v1/integrations/github/hooks',
      payload: raw,
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'ping',
        'x-github-delivery': delivery,
        'x-hub-signature-256': signBody(HOOK_SECRET, Buffer.from(raw)),
      },
    });
    expect(r.statusCode, r.body).toBe(200);
    const entries = (await auditOf('resource_type=hooks')).filter((e) => e.action === 'POST /v1/integrations/github/hooks');
    const entry = entries.find((e) => (e.after as { hook_id?: number } | null)?.hook_id === 42);
    expect(entry, JSON.stringify(entries)).toBeDefined();
    expect(entry!.after).toEqual({ zen: 'Practicality beats purity.', hook_id: 42, hook: { config: { secret: '[redacted]' } } });
    expect(JSON.stringify(entries)).not.toMatch(/"type":"Buffer"|not-for-the-audit/);
  });
});
