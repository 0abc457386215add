import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../helpers/harness.js';
import { call, expectError, unique } from './fixtures.js';

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => {
  await h?.close();
});

describe('/v1/users (site administrators)', () => {
  it('an admin creates and lists users; the new user can log in', async () => {
    const admin = await h.user({ admin: true });
    const username = unique('dev');
    const created = await call(h, 'POST', '/v1/users', admin, {
      username,
      email: `${username}@Example.com`,
      password: 'correct horse battery',
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.any(String),
      username,
      email: `${username}@example.com`,
      is_admin: false,
      created: expect.any(String),
      updated: expect.any(String),
    });
    expect(created.raw).not.toContain('correct horse');
    const list = await call(h, 'GET', '/v1/users', admin);
    expect(list.status).toBe(200);
    expect(list.body.map((u: any) => u.username)).toEqual(expect.arrayContaining([admin.username, username]));
    expect(list.raw).not.toMatch(/password|scrypt/);
    const login = await h.app.inject({
      method: 'POST',
      url: '/v1/auth/login',
      payload: { email: `${username}@example.com`, password: 'correct horse battery' },
    });
    expect(login.statusCode).toBe(200);
  });

  it('an admin can create another admin', async () => {
    const admin = await h.user({ admin: true });
    const username = unique('ops');
    const created = await call(h, 'POST', '/v1/users', admin, {
      username,
      email: `${username}@example.com`,
      password: 'longenough',
      is_admin: true,
    });
    expect(created.body.is_admin).toBe(true);
  });

  it('others get 403, anonymous callers 401', async () => {
    const user = await h.user();
    expectError(await call(h, 'GET', '/v1/users', user), 403);
    expectError(await call(h, 'POST', '/v1/users', user, { username: 'x1', email: 'x1@example.com', password: 'longenough' }), 403);
    expectError(await call(h, 'GET', '/v1/users'), 401);
    expect(await h.ctx.db.selectFrom('users').select('id').where('username', '=', 'x1').execute()).toHaveLength(0);
  });

  it('duplicate usernames and emails are 409, case-insensitively', async () => {
    const admin = await h.user({ admin: true });
    const username = unique('dup');
    expect((await call(h, 'POST', '/v1/users', admin, { username, email: `${username}@example.com`, password: 'longenough' })).status).toBe(
      201,
    );
    expectError(
      await call(h, 'POST', '/v1/users', admin, { username: username.toUpperCase(), email: 'other@example.com', password: 'longenough' }),
      409,
    );
    expectError(
      await call(h, 'POST', '/v1/users', admin, {
        username: unique('x'),
        email: `${username.toUpperCase()}@EXAMPLE.com`,
        password: 'longenough',
      }),
      409,
    );
  });

  it('validates username, email and password', async () => {
    const admin = await h.user({ admin: true });
    const bad = [
      { username: 'has space', email: 'a@example.com', password: 'longenough' },
      { username: 'ok', email: 'not-an-email', password: 'longenough' },
      { username: 'ok', email: 'ok@example.com', password: 'short' },
      { username: 'ok', email: 'ok@example.com' },
      { username: 'ok', email: 'ok@example.com', password: 'longenough', is_admin: 'yes' },
      { username: 'ok', email: 'ok@example.com', password: 'longenough', role: 'admin' },
      { username: 'x'.repeat(64), email: 'ok@example.com', password: 'longenough' },
    ];
    for (const body of bad) expectError(await call(h, 'POST', '/v1/users', admin, body), 422);
  });
});
