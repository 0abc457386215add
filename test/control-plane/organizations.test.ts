import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { call, expectError, unique } from './fixtures.js';

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => {
  await h?.close();
});

async function newOrg(owner: TestUser, name = unique('Team')) {
  const res = await call(h, 'POST', '/v1/organizations', owner, { name });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { id: string; slug: string };
}

async function addMember(admin: TestUser, slug: string, who: TestUser, isAdmin = false) {
  const res = await call(h, 'POST', `/v1/organizations/${slug}/members`, admin, { username: who.username, admin: isAdmin });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

describe('organizations', () => {
  it('creating one makes the caller its admin; the slug is derived from the name', async () => {
    const alice = await h.user();
    const res = await call(h, 'POST', '/v1/organizations', alice, { name: 'Ünïcode Späce Org!' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      name: 'Ünïcode Späce Org!',
      slug: 'unicode-space-org',
      members: [{ user_id: alice.id, username: alice.username, email: alice.email, admin: true, role: 'owner' }],
      member_count: 1,
      project_count: 0,
      application_count: 0,
      created: expect.any(String),
      updated: expect.any(String),
    });
    const explicit = await call(h, 'POST', '/v1/organizations', alice, { name: 'Whatever', slug: 'my-slug' });
    expect(explicit.body.slug).toBe('my-slug');
    expectError(await call(h, 'POST', '/v1/organizations', alice, { name: 'Again', slug: 'my-slug' }), 409);
    expectError(await call(h, 'POST', '/v1/organizations', alice, { name: '!!!' }), 422);
  });

  it("lists only the caller's organizations, with counts computed from the data", async () => {
    const owner = await h.user();
    const member = await h.user();
    const outsider = await h.user();
    const org = await newOrg(owner);
    await addMember(owner, org.slug, member);
    const p1 = await call(h, 'POST', '/v1/projects', owner, { name: 'One', organization_id: org.id });
    const p2 = await call(h, 'POST', '/v1/projects', member, { name: 'Two', organization_id: org.id });
    for (const name of ['a', 'b']) await call(h, 'POST', '/v1/applications', owner, { name, project_id: p1.body.id });
    await call(h, 'POST', '/v1/applications', owner, { name: 'c', project_id: p2.body.id });

    const list = await call(h, 'GET', '/v1/organizations', member);
    expect(list.body).toEqual([expect.objectContaining({ id: org.id, slug: org.slug, member_count: 2, project_count: 2 })]);
    const detail = await call(h, 'GET', `/v1/organizations/${org.slug}`, member);
    expect(detail.body).toMatchObject({ member_count: 2, project_count: 2, application_count: 3 });
    expect(detail.body.members.map((m: any) => m.username).sort()).toEqual([owner.username, member.username].sort());

    // Counts follow the data, not a stored counter.
    const counted = await h.ctx.db
      .selectFrom('applications')
      .innerJoin('projects', 'projects.id', 'applications.project_id')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('projects.organization_id', '=', org.id)
      .executeTakeFirstOrThrow();
    expect(counted.n).toBe(3);

    expect((await call(h, 'GET', '/v1/organizations', outsider)).body).toEqual([]);
    expectError(await call(h, 'GET', `/v1/organizations/${org.slug}`, outsider), 403);
    expectError(await call(h, 'GET', '/v1/organizations/no-such-org', outsider), 404);
    expectError(await call(h, 'GET', '/v1/organizations/Not_A_Slug', outsider), 404);
  });
});

describe('members', () => {
  it('admins add members by username or email; duplicates are 409; unknown users 404', async () => {
    const owner = await h.user();
    const bob = await h.user();
    const carol = await h.user();
    const org = await newOrg(owner);
    const added = await addMember(owner, org.slug, bob);
    expect(added.members).toContainEqual({ user_id: bob.id, username: bob.username, email: bob.email, admin: false, role: 'developer' });
    const byEmail = await call(h, 'POST', `/v1/organizations/${org.slug}/members`, owner, {
      username: carol.email.toUpperCase(),
      admin: true,
    });
    expect(byEmail.status).toBe(200);
    expect(byEmail.body.members).toContainEqual(expect.objectContaining({ user_id: carol.id, admin: true }));
    expect(byEmail.body.member_count).toBe(3);
    expectError(await call(h, 'POST', `/v1/organizations/${org.slug}/members`, owner, { username: bob.username }), 409);
    expectError(await call(h, 'POST', `/v1/organizations/${org.slug}/members`, owner, { username: 'nobody-here' }), 404);
    expectError(await call(h, 'POST', `/v1/organizations/${org.slug}/members`, owner, { username: bob.username, admin: 'yes' }), 422);
  });

  it('only admins manage members', async () => {
    const owner = await h.user();
    const bob = await h.user();
    const dave = await h.user();
    const org = await newOrg(owner);
    await addMember(owner, org.slug, bob);
    expectError(await call(h, 'POST', `/v1/organizations/${org.slug}/members`, bob, { username: dave.username }), 403);
    expectError(await call(h, 'POST', `/v1/organizations/${org.slug}/members/${owner.id}/toggle-admin`, bob), 403);
    expectError(await call(h, 'POST', `/v1/organizations/${org.slug}/members/${bob.id}/toggle-admin`, bob), 403);
    expectError(await call(h, 'DELETE', `/v1/organizations/${org.slug}/members/${owner.id}`, bob), 403);
    const members = await h.ctx.db.selectFrom('memberships').selectAll().where('organization_id', '=', org.id).execute();
    expect(members.map((m) => [m.user_id, m.admin]).sort()).toEqual(
      [
        [owner.id, true],
        [bob.id, false],
      ].sort(),
    );
  });

  it('toggle-admin flips the flag; a plain member may leave; admins remove members', async () => {
    const owner = await h.user();
    const bob = await h.user();
    const carol = await h.user();
    const org = await newOrg(owner);
    await addMember(owner, org.slug, bob);
    await addMember(owner, org.slug, carol);
    expect((await call(h, 'POST', `/v1/organizations/${org.slug}/members/${bob.id}/toggle-admin`, owner)).body).toEqual({
      ok: true,
      admin: true,
    });
    // Bob is an admin now, but only an owner changes an owner.
    expectError(await call(h, 'POST', `/v1/organizations/${org.slug}/members/${owner.id}/toggle-admin`, bob), 403);
    expect((await call(h, 'POST', `/v1/organizations/${org.slug}/members/${carol.id}/toggle-admin`, bob)).body).toEqual({
      ok: true,
      admin: true,
    });
    expect((await call(h, 'POST', `/v1/organizations/${org.slug}/members/${carol.id}/toggle-admin`, bob)).body).toEqual({
      ok: true,
      admin: false,
    });
    // Carol leaves on her own.
    expect((await call(h, 'DELETE', `/v1/organizations/${org.slug}/members/${carol.id}`, carol)).body).toEqual({ ok: true });
    expectError(await call(h, 'GET', `/v1/organizations/${org.slug}`, carol), 403);
    // The owner removes Bob.
    expect((await call(h, 'DELETE', `/v1/organizations/${org.slug}/members/${bob.id}`, owner)).body).toEqual({ ok: true });
    expectError(await call(h, 'DELETE', `/v1/organizations/${org.slug}/members/${bob.id}`, owner), 404);
    expectError(await call(h, 'POST', `/v1/organizations/${org.slug}/members/${bob.id}/toggle-admin`, owner), 404);
    expectError(await call(h, 'POST', `/v1/organizations/${org.slug}/members/not-a-uuid/toggle-admin`, owner), 404);
    expect((await call(h, 'GET', `/v1/organizations/${org.slug}`, owner)).body.member_count).toBe(1);
  });

  it('the last admin can be neither demoted nor removed (409)', async () => {
    const owner = await h.user();
    const bob = await h.user();
    const org = await newOrg(owner);
    await addMember(owner, org.slug, bob);
    expectError(await call(h, 'POST', `/v1/organizations/${org.slug}/members/${owner.id}/toggle-admin`, owner), 409);
    expectError(await call(h, 'DELETE', `/v1/organizations/${org.slug}/members/${owner.id}`, owner), 409);
    const rows = await h.ctx.db
      .selectFrom('memberships')
      .selectAll()
      .where('organization_id', '=', org.id)
      .where('admin', '=', true)
      .execute();
    expect(rows.map((r) => r.user_id)).toEqual([owner.id]);
  });

  it('two admins demoting (or removing) each other at once leave exactly one admin', async () => {
    for (const action of ['toggle', 'remove'] as const) {
      for (let round = 0; round < 3; round++) {
        const a = await h.user();
        const b = await h.user();
        const org = await newOrg(a);
        await addMember(a, org.slug, b, true);
        // Two owners: only an owner changes an owner.
        expect((await call(h, 'PUT', `/v1/organizations/${org.slug}/members/${b.id}/role`, a, { role: 'owner' })).status).toBe(200);
        const act = (caller: TestUser, target: TestUser) =>
          action === 'toggle'
            ? call(h, 'POST', `/v1/organizations/${org.slug}/members/${target.id}/toggle-admin`, caller)
            : call(h, 'DELETE', `/v1/organizations/${org.slug}/members/${target.id}`, caller);
        const results = await Promise.all([act(a, b), act(b, a)]);
        const statuses = results.map((r) => r.status).sort();
        // One wins; the other finds itself the last owner (409) or, once removed, no longer a member (403).
        expect(statuses[0]).toBe(200);
        expect([403, 409]).toContain(statuses[1]);
        const admins = await h.ctx.db
          .selectFrom('memberships')
          .select('user_id')
          .where('organization_id', '=', org.id)
          .where('admin', '=', true)
          .execute();
        expect(admins).toHaveLength(1);
      }
    }
  });
});
