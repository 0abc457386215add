/**
 * Invitations through the HTTP API: invite with a role (no mailer: the link is shown to the
 * inviter; with SMTP: e-mailed to a loopback SMTP server), accept signed in or by signing up, list and revoke open ones; expired, revoked,
 * spent, wrong-address and escalating invitations refused with the reason and nothing created.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { call, expectError, seedWorld, snapshotTables, unique, type World } from '../control-plane/fixtures.js';
import { mailHeader, mimePart, SmtpSink } from '../helpers/smtp-sink.js';

let h: Harness;
let world: World;
let developer: TestUser;
const tokenOf = (link: string) => link.slice(link.lastIndexOf('/') + 1);

beforeAll(async () => {
  h = await createHarness();
  world = await seedWorld(h);
  developer = await h.user();
  expect((await call(h, 'POST', `/v1/organizations/${world.org.slug}/members`, world.owner, { username: developer.username })).status).toBe(
    200,
  );
});
afterAll(async () => {
  await h?.close();
});

describe('invitations', () => {
  const invitations = () => `/v1/organizations/${world.org.slug}/invitations`;

  it('an existing user accepts, signed in as the invited address, and gets the role', async () => {
    const invitee = await h.user();
    const created = await call(h, 'POST', invitations(), world.owner, { email: invitee.email.toUpperCase(), role: 'deployer' });
    expect(created.status, created.raw).toBe(201);
    expect(created.body).toMatchObject({ email: invitee.email.toLowerCase(), role: 'deployer', delivered: false });
    expect(created.body.link).toMatch(/\/invitations\/inv_/);
    const token = tokenOf(created.body.link);
    expect((await call(h, 'GET', invitations(), world.owner)).body).toContainEqual(expect.objectContaining({ id: created.body.id }));
    // Anyone with the link sees what it offers; only the invited address accepts it.
    expect((await call(h, 'GET', `/v1/invitations/${token}`)).body).toMatchObject({ organization: world.org.slug, role: 'deployer' });
    expectError(await call(h, 'POST', `/v1/invitations/${token}/accept`, developer), 403);
    const accepted = await call(h, 'POST', `/v1/invitations/${token}/accept`, invitee);
    expect(accepted.status, accepted.raw).toBe(200);
    expect(accepted.body).toEqual({ organization: world.org.slug, role: 'deployer', user_id: invitee.id });
    const detail = await call(h, 'GET', `/v1/organizations/${world.org.slug}`, invitee);
    expect(detail.body.members).toContainEqual(expect.objectContaining({ user_id: invitee.id, role: 'deployer' }));
    expectError(await call(h, 'POST', `/v1/invitations/${token}/accept`, invitee), 410);
    expect((await call(h, 'GET', invitations(), world.owner)).body).not.toContainEqual(expect.objectContaining({ id: created.body.id }));
  });

  it('a newcomer signs up with the invited address, then signs in', async () => {
    const email = `${unique('newcomer')}@example.com`;
    const created = await call(h, 'POST', invitations(), world.owner, { email, role: 'viewer' });
    const token = tokenOf(created.body.link);
    const username = unique('newcomer');
    const signed = await call(h, 'POST', `/v1/invitations/${token}/sign-up`, null, { username, password: 'a-long-password-1' });
    expect(signed.status, signed.raw).toBe(201);
    expect(signed.body).toMatchObject({ organization: world.org.slug, role: 'viewer' });
    const login = await call(h, 'POST', '/v1/auth/login', null, { email, password: 'a-long-password-1' });
    expect(login.status).toBe(200);
    expectError(
      await call(h, 'POST', `/v1/invitations/${token}/sign-up`, null, { username: unique('again'), password: 'x-password-2' }),
      410,
    );
  });

  it('expired and revoked invitations are refused with the reason, and create nothing', async () => {
    const expired = await call(h, 'POST', invitations(), world.owner, { email: `${unique('late')}@example.com`, role: 'developer' });
    const revoked = await call(h, 'POST', invitations(), world.owner, { email: `${unique('gone')}@example.com`, role: 'developer' });
    // Time passes for the first one.
    await h.ctx.db
      .updateTable('invitations')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('id', '=', expired.body.id)
      .execute();
    expect((await call(h, 'DELETE', `${invitations()}/${revoked.body.id}`, world.owner)).status).toBe(200);
    expectError(await call(h, 'DELETE', `${invitations()}/${revoked.body.id}`, world.owner), 404);
    const before = await snapshotTables(h);
    for (const [invitation, reason] of [
      [expired, 'expired'],
      [revoked, 'revoked'],
    ] as const) {
      const token = tokenOf(invitation.body.link);
      const res = await call(h, 'POST', `/v1/invitations/${token}/sign-up`, null, { username: unique('x'), password: 'a-long-password-1' });
      expectError(res, 410);
      expect(res.body.message).toContain(reason);
      expectError(await call(h, 'GET', `/v1/invitations/${token}`), 410);
    }
    expectError(await call(h, 'GET', '/v1/invitations/inv_not-a-real-token'), 404);
    expect(await snapshotTables(h)).toEqual(before);
    // The expired one gives way to a new invitation to the same address.
    const again = await call(h, 'POST', invitations(), world.owner, { email: expired.body.email, role: 'developer' });
    expect(again.status, again.raw).toBe(201);
  });

  it('inviting is for admins, never above their own role; one open invitation per address', async () => {
    const email = `${unique('esc')}@example.com`;
    const before = await snapshotTables(h);
    const byDeveloper = await call(h, 'POST', invitations(), developer, { email, role: 'viewer' });
    expectError(byDeveloper, 403);
    expect(byDeveloper.body.message).toContain('is developer');
    const admin = await h.user();
    await call(h, 'POST', `/v1/organizations/${world.org.slug}/members`, world.owner, { username: admin.username, role: 'admin' });
    const snapshot = await snapshotTables(h);
    expectError(await call(h, 'POST', invitations(), admin, { email, role: 'owner' }), 403);
    expectError(await call(h, 'POST', invitations(), admin, { email, role: 'root' }), 422);
    expectError(await call(h, 'GET', invitations(), developer), 403);
    expect(await snapshotTables(h)).toEqual(snapshot);
    expect(before).not.toEqual(snapshot);
    expect((await call(h, 'POST', invitations(), admin, { email, role: 'admin' })).status).toBe(201);
    expectError(await call(h, 'POST', invitations(), admin, { email, role: 'viewer' }), 409);
    expectError(await call(h, 'POST', invitations(), admin, { email: developer.email, role: 'viewer' }), 409);
  });
});

describe('invitations by e-mail (SMTP configured)', () => {
  const sink = new SmtpSink();
  let mailing: Harness;
  let mailWorld: World;

  beforeAll(async () => {
    await sink.start();
    mailing = await createHarness({
      SMTP_HOST: '127.0.0.1',
      SMTP_PORT: sink.port,
      SMTP_TLS: 'none',
      SMTP_FROM: 'Slipway <slipway@example.test>',
      DASHBOARD_URL: 'https://slipway.example.test/',
    });
    mailWorld = await seedWorld(mailing);
  });
  afterAll(async () => {
    await mailing?.close();
    await sink.close();
  });

  it('is delivered to a real SMTP server with a text and an HTML part, accepted from the mailed link; the link is never shown', async () => {
    const email = `${unique('mailed')}@example.com`;
    const url = `/v1/organizations/${mailWorld.org.slug}/invitations`;
    const created = await call(mailing, 'POST', url, mailWorld.owner, { email, role: 'deployer' });
    expect(created.status, created.raw).toBe(201);
    expect(created.body).toMatchObject({ delivered: true });
    expect(created.body.link).toBeUndefined();
    const mail = sink.mails.find((m) => m.to.includes(email));
    expect(mail, 'an e-mail to the invited address').toBeDefined();
    expect(mailHeader(mail!.raw, 'Subject')).toBe(`You are invited to ${mailWorld.org.slug} on Slipway`);
    const text = mimePart(mail!.raw, 'text/plain')!;
    const html = mimePart(mail!.raw, 'text/html')!;
    expect(text).toContain('as deployer');
    const link = /https:\/\/slipway\.example\.test\/\S*invitations\/(inv_[\w-]+)/.exec(text);
    expect(link, text).not.toBeNull();
    expect(html).toContain(`href="${link![0]}"`);
    const signed = await call(mailing, 'POST', `/v1/invitations/${link![1]}/sign-up`, null, {
      username: unique('mailed'),
      password: 'a-long-password-1',
    });
    expect(signed.status, signed.raw).toBe(201);
    expect(signed.body).toMatchObject({ organization: mailWorld.org.slug, role: 'deployer' });
  });

  it('falls back to showing the link when the SMTP server refuses the message', async () => {
    sink.rejectNext = 1;
    const created = await call(mailing, 'POST', `/v1/organizations/${mailWorld.org.slug}/invitations`, mailWorld.owner, {
      email: `${unique('refused')}@example.com`,
      role: 'viewer',
    });
    expect(created.status, created.raw).toBe(201);
    expect(created.body).toMatchObject({ delivered: false });
    expect(created.body.link).toMatch(/\/invitations\/inv_/);
  });
});
