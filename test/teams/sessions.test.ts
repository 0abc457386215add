/**
 * Sessions (issue 32) through the HTTP API: each sign-in remembers its method, address and user
 * agent; a person lists theirs and ends one or all the others; a session unused past the idle
 * timeout ends; a site administrator lists and ends anyone's; an organization admin sees only
 * members' last sign-in; a revoked session gets 401 on its next request; password sign-ins and
 * an API key's first use of the day are audited with method and address.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { call, expectError, seedWorld, type World } from '../control-plane/fixtures.js';

const IDLE_MINUTES = 30;

let h: Harness;
let world: World;
let admin: TestUser;
let member: TestUser;

/** Signs in with the password from a named browser: the session's cookie header. */
async function signIn(user: TestUser, agent: string) {
  const res = await h.app.inject({
    method: 'POST',
    url: '/v1/auth/login',
    headers: { 'user-agent': agent },
    payload: { email: user.email, password: user.password },
  });
  expect(res.statusCode, res.body).toBe(200);
  return { cookie: String(res.headers['set-cookie']).split(';')[0]! };
}

const mine = (cookie: string) => call(h, 'GET', '/v1/users/me/sessions', null, undefined, { cookie });

beforeAll(async () => {
  h = await createHarness({ SESSION_IDLE_MINUTES: IDLE_MINUTES });
  world = await seedWorld(h);
  admin = await h.user({ admin: true });
  member = await h.user();
  expect((await call(h, 'POST', `/v1/organizations/${world.org.slug}/members`, world.owner, { username: member.username })).status).toBe(
    200,
  );
});
afterAll(async () => {
  await h?.close();
});

describe('sessions', () => {
  it('lists how, when and from where each sign-in began, and ends one or all the others', async () => {
    const laptop = await signIn(member, 'Firefox on the laptop');
    const phone = await signIn(member, 'Safari on the phone');
    const listed = await mine(laptop.cookie);
    expect(listed.status, listed.raw).toBe(200);
    expect(listed.body).toHaveLength(2);
    expect(listed.body).toContainEqual(
      expect.objectContaining({ method: 'password', address: '127.0.0.1', user_agent: 'Firefox on the laptop', current: true }),
    );
    const phoneRow = listed.body.find((s: { user_agent: string }) => s.user_agent === 'Safari on the phone');
    expect(phoneRow).toMatchObject({ current: false, last_used: expect.any(String), expires: expect.any(String) });
    expect(listed.raw).not.toContain(laptop.cookie.split('=')[1]);

    expect((await mine(phone.cookie)).status).toBe(200);
    expect((await call(h, 'DELETE', `/v1/users/me/sessions/${phoneRow.id}`, null, undefined, { cookie: laptop.cookie })).status).toBe(200);
    expectError(await mine(phone.cookie), 401);
    expectError(await call(h, 'DELETE', `/v1/users/me/sessions/${phoneRow.id}`, null, undefined, { cookie: laptop.cookie }), 404);
    // Another person's session is not found, not ended.
    const other = await signIn(world.owner, 'owner browser');
    const otherId = (await mine(other.cookie)).body[0].id;
    expectError(await call(h, 'DELETE', `/v1/users/me/sessions/${otherId}`, member), 404);
    expect((await mine(other.cookie)).status).toBe(200);

    const tablet = await signIn(member, 'tablet');
    const desktop = await signIn(member, 'desktop');
    const ended = await call(h, 'DELETE', '/v1/users/me/sessions', null, undefined, { cookie: laptop.cookie });
    expect(ended.body).toEqual({ ok: true, revoked: 2 });
    expectError(await mine(tablet.cookie), 401);
    expectError(await mine(desktop.cookie), 401);
    expect((await mine(laptop.cookie)).body).toEqual([expect.objectContaining({ user_agent: 'Firefox on the laptop', current: true })]);
    // The API key is no session: it keeps working.
    expect((await call(h, 'GET', '/v1/users/me/sessions', member)).status).toBe(200);
  });

  it('ends a session left unused past the idle timeout, and lists only live ones', async () => {
    const idle = await signIn(member, 'forgotten browser');
    const fresh = await signIn(member, 'busy browser');
    // Read through the other session: the idle one is never verified (nor cached) before time passes for it.
    const idleId = (await mine(fresh.cookie)).body.find((s: { user_agent: string }) => s.user_agent === 'forgotten browser').id;
    await h.ctx.db
      .updateTable('sessions')
      .set({ last_seen_at: new Date(Date.now() - (IDLE_MINUTES + 1) * 60_000) })
      .where('id', '=', idleId)
      .execute();
    expectError(await mine(idle.cookie), 401);
    const live = await mine(fresh.cookie);
    expect(live.body.map((s: { id: string }) => s.id)).not.toContain(idleId);
  });

  it("shows a CLI's browser login as a session, and ending it stops its key", async () => {
    const browser = await signIn(member, 'approving browser');
    const approved = await call(
      h,
      'POST',
      '/v1/auth/cli-logins',
      null,
      { code: 'SESSIONS-TEST-1', port: 41234, client: 'slipway CLI' },
      { cookie: browser.cookie, 'x-api-key': '' },
    );
    expect(approved.status, approved.raw).toBe(201);
    const cliKey = new URL(approved.body.callback).searchParams.get('api_key')!;
    expect((await call(h, 'GET', `/v1/organizations/${world.org.slug}`, null, undefined, { 'x-api-key': cliKey })).status).toBe(200);
    const row = (await mine(browser.cookie)).body.find((s: { method: string }) => s.method === 'cli-browser');
    expect(row).toMatchObject({ id: approved.body.key.id, user_agent: 'slipway CLI (browser login)', address: '127.0.0.1' });
    expect((await call(h, 'DELETE', `/v1/users/me/sessions/${row.id}`, null, undefined, { cookie: browser.cookie })).status).toBe(200);
    expectError(await call(h, 'GET', `/v1/organizations/${world.org.slug}`, null, undefined, { 'x-api-key': cliKey }), 401);
  });

  it('a site administrator lists and ends anyone’s sessions; others may not; a scoped key may not list its user’s', async () => {
    const victim = await h.user();
    const one = await signIn(victim, 'one');
    const two = await signIn(victim, 'two');
    const url = `/v1/users/${victim.id}/sessions`;
    expectError(await call(h, 'GET', url, member), 403);
    expectError(await call(h, 'DELETE', url, member), 403);
    expect((await mine(one.cookie)).status).toBe(200);
    const listed = await call(h, 'GET', url, admin);
    expect(listed.body.map((s: { user_agent: string }) => s.user_agent).sort()).toEqual(['one', 'two']);
    expect(listed.body.every((s: { current: boolean }) => !s.current)).toBe(true);
    expect((await call(h, 'DELETE', url, admin)).body).toEqual({ ok: true, revoked: 2 });
    expectError(await mine(one.cookie), 401);
    expectError(await mine(two.cookie), 401);
    expect((await call(h, 'GET', '/v1/users/me/sessions', victim)).status).toBe(200);
    expectError(await call(h, 'GET', `/v1/users/00000000-0000-7000-8000-000000000000/sessions`, admin), 404);

    const scoped = await call(h, 'POST', '/v1/auth/api-keys', victim, { name: 'read only', actions: ['read'] });
    expectError(await call(h, 'GET', '/v1/users/me/sessions', null, undefined, { 'x-api-key': scoped.body.key }), 403);
  });

  it("an organization admin sees members' last sign-in and how, not their sessions; a member sees neither", async () => {
    await signIn(member, 'for the admins');
    const seen = await call(h, 'GET', `/v1/organizations/${world.org.slug}/sign-ins`, world.owner);
    expect(seen.status, seen.raw).toBe(200);
    expect(seen.body).toContainEqual({
      user_id: member.id,
      username: member.username,
      role: 'developer',
      last_sign_in: expect.any(String),
      method: 'password',
    });
    expect(seen.raw).not.toContain('127.0.0.1');
    expectError(await call(h, 'GET', `/v1/organizations/${world.org.slug}/sign-ins`, member), 403);
    expectError(await call(h, 'GET', `/v1/users/${member.id}/sessions`, world.owner), 403);
  });

  it('audits a password sign-in and each API key’s first use of the day, with method and address', async () => {
    const user = await h.user();
    await signIn(user, 'audited');
    const sessionId = (await call(h, 'GET', `/v1/users/${user.id}/sessions`, admin)).body[0].id;
    const created = await call(h, 'POST', '/v1/auth/api-keys', user, { name: 'ci' });
    const key = created.body.key as string;
    for (let i = 0; i < 3; i++) expect((await call(h, 'GET', '/v1/organizations', null, undefined, { 'x-api-key': key })).status).toBe(200);
    // Another key last used yesterday: its first use today is a sign-in again.
    const older = await call(h, 'POST', '/v1/auth/api-keys', user, { name: 'nightly' });
    await h.ctx.db
      .updateTable('api_keys')
      .set({ last_used_at: new Date(Date.now() - 86400_000) })
      .where('id', '=', older.body.id)
      .execute();
    for (let i = 0; i < 2; i++)
      expect((await call(h, 'GET', '/v1/organizations', null, undefined, { 'x-api-key': older.body.key })).status).toBe(200);
    const rows = (await call(h, 'GET', `/v1/audit-log?actor=${user.id}&per_page=100`, admin)).body.items as Array<{
      action: string;
      resource_id: string | null;
      after: { method?: string } | null;
    }>;
    expect(rows.filter((r) => r.action === 'POST /v1/auth/login')).toEqual([
      expect.objectContaining({
        actor: expect.objectContaining({ user_id: user.id, credential_kind: 'password', credential_id: sessionId }),
        client_address: '127.0.0.1',
        resource_type: 'sessions',
        resource_id: sessionId,
        after: { method: 'password', email: user.email },
      }),
    ]);
    for (const id of [created.body.id, older.body.id]) {
      const uses = rows.filter((r) => r.after?.method === 'api_key' && r.resource_id === id);
      expect(uses, id).toEqual([
        expect.objectContaining({
          actor: expect.objectContaining({ user_id: user.id, credential_kind: 'api_key', credential_id: id }),
          client_address: '127.0.0.1',
        }),
      ]);
    }
  });
});
