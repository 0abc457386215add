import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../helpers/harness.js';
import { ConfigurationsRepository, ConfigurationsService } from '../../src/modules/configurations/index.js';
import { call, expectError, seedWorld, type World } from './fixtures.js';

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => {
  await h?.close();
});

const base = (w: World) => `/v1/configurations/${w.app.id}`;

/** The plain values the pipeline would see (never shown by the API). */
async function resolved(w: World) {
  const vars = await new ConfigurationsService(h.ctx.db, new ConfigurationsRepository(h.ctx.db), h.ctx.secrets).resolve([
    { scope: 'application', scopeId: w.app.id },
  ]);
  return Object.fromEntries(vars.map((v) => [v.name, v.value]));
}

describe('configuration variables', () => {
  it('CRUD with the spec fields; secrets read "**secret**" and are sealed at rest', async () => {
    const w = await seedWorld(h);
    const created = await call(h, 'POST', base(w), w.owner, { name: 'API_TOKEN', value: 'tok-123456789', secret: true, buildtime: true });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.any(String),
      name: 'API_TOKEN',
      value: '**secret**',
      secret: true,
      buildtime: true,
      previews: false,
      created: expect.any(String),
      updated: expect.any(String),
    });
    const row = await h.ctx.db.selectFrom('config_vars').selectAll().where('id', '=', created.body.id).executeTakeFirstOrThrow();
    expect(row.value).toBeNull();
    expect(row.value_sealed).not.toContain('tok-123456789');
    expect(row.value_sealed).toMatch(/^v1:/);

    const list = await call(h, 'GET', base(w), w.owner);
    expect(list.body.map((v: any) => [v.name, v.value])).toEqual([
      ['API_TOKEN', '**secret**'],
      ['DATABASE_PASSWORD', '**secret**'],
      ['LOG_LEVEL', 'debug'],
    ]);
    expect((await call(h, 'GET', `${base(w)}/${w.plainVar.id}`, w.owner)).body).toMatchObject({
      name: 'LOG_LEVEL',
      value: 'debug',
      secret: false,
      buildtime: false,
    });
    expect((await call(h, 'GET', `${base(w)}/${created.body.id}`, w.owner)).body.value).toBe('**secret**');

    const patched = await call(h, 'PATCH', `${base(w)}/${w.plainVar.id}`, w.owner, { value: 'info', buildtime: true });
    expect(patched.body).toMatchObject({ value: 'info', buildtime: true, secret: false });
    // Making a plain variable secret keeps its value, now sealed.
    const sealed = await call(h, 'PATCH', `${base(w)}/${w.plainVar.id}`, w.owner, { secret: true });
    expect(sealed.body).toMatchObject({ value: '**secret**', secret: true, buildtime: true });
    expect((await resolved(w)).LOG_LEVEL).toBe('info');
    // A secret's value can be replaced without revealing it.
    expect((await call(h, 'PATCH', `${base(w)}/${created.body.id}`, w.owner, { value: 'tok-rotated' })).body.value).toBe('**secret**');
    expect((await resolved(w)).API_TOKEN).toBe('tok-rotated');

    expect((await call(h, 'DELETE', `${base(w)}/${created.body.id}`, w.owner)).body).toEqual({ ok: true });
    expectError(await call(h, 'GET', `${base(w)}/${created.body.id}`, w.owner), 404);
    expectError(await call(h, 'DELETE', `${base(w)}/${created.body.id}`, w.owner), 404);
    expectError(await call(h, 'PATCH', `${base(w)}/${created.body.id}`, w.owner, { value: 'x' }), 404);
  });

  it('un-secreting needs a new value (the old one is never revealed)', async () => {
    const w = await seedWorld(h);
    const url = `${base(w)}/${w.secretVar.id}`;
    const refused = await call(h, 'PATCH', url, w.owner, { secret: false });
    expectError(refused, 422);
    expect(refused.raw).not.toContain(w.secretVar.value);
    expect((await resolved(w)).DATABASE_PASSWORD).toBe(w.secretVar.value);
    const ok = await call(h, 'PATCH', url, w.owner, { secret: false, value: 'now-public' });
    expect(ok.body).toMatchObject({ secret: false, value: 'now-public' });
    const row = await h.ctx.db.selectFrom('config_vars').selectAll().where('id', '=', w.secretVar.id).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ value: 'now-public', value_sealed: null });
  });

  it('names are validated and unique case-insensitively; values at most 32 KiB', async () => {
    const w = await seedWorld(h);
    expectError(await call(h, 'POST', base(w), w.owner, { name: 'log_level', value: 'x' }), 409);
    for (const name of ['1ABC', 'A-B', 'A B', '', 'x'.repeat(256)])
      expectError(await call(h, 'POST', base(w), w.owner, { name, value: 'x' }), 422);
    expectError(await call(h, 'POST', base(w), w.owner, { name: 'BIG', value: 'x'.repeat(32 * 1024 + 1) }), 422);
    expect((await call(h, 'POST', base(w), w.owner, { name: 'BIG', value: 'x'.repeat(32 * 1024) })).status).toBe(201);
    expectError(await call(h, 'POST', base(w), w.owner, { name: 'N', value: 1 }), 422);
    expectError(await call(h, 'POST', base(w), w.owner, { name: 'N', value: 'x', secret: 'true' }), 422);
    expectError(await call(h, 'PATCH', `${base(w)}/${w.plainVar.id}`, w.owner, {}), 422);
    expectError(await call(h, 'PATCH', `${base(w)}/${w.plainVar.id}`, w.owner, { name: 'RENAMED' }), 422);
  });

  it("the list PostgreSQL writes (issue 35's hot path) holds each variable as node shapes it, in name order", async () => {
    const w = await seedWorld(h);
    // Values JSON must escape, an empty one, and microseconds node cuts to milliseconds.
    await call(h, 'POST', base(w), w.owner, { name: 'QUOTED', value: 'say "hi"\\n\ttab é 🚀 </script>' });
    await call(h, 'POST', base(w), w.owner, { name: 'EMPTY', value: '' });
    await call(h, 'POST', base(w), w.owner, { name: 'A_FIRST', value: 'x', buildtime: true, previews: true });
    await h.ctx.db
      .updateTable('config_vars')
      .set({ updated_at: new Date('2026-01-02T03:04:05.678Z') })
      .where('scope_id', '=', w.app.id)
      .where('name', '=', 'EMPTY')
      .execute();
    const list = await call(h, 'GET', base(w), w.owner);
    expect(list.status, list.raw).toBe(200);
    expect(list.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(list.body.map((v: any) => v.name)).toEqual(['A_FIRST', 'DATABASE_PASSWORD', 'EMPTY', 'LOG_LEVEL', 'QUOTED']);
    for (const v of list.body) expect(v).toEqual((await call(h, 'GET', `${base(w)}/${v.id}`, w.owner)).body);
    expect(list.body.find((v: any) => v.name === 'DATABASE_PASSWORD').value).toBe('**secret**');
    expect(list.raw).not.toContain(w.secretVar.value);
    expect(list.body.find((v: any) => v.name === 'QUOTED').value).toBe('say "hi"\\n\ttab é 🚀 </script>');
    expect(list.body.find((v: any) => v.name === 'EMPTY')).toMatchObject({ value: '', updated: '2026-01-02T03:04:05.678Z' });
    // An application without variables answers an empty list; strangers and unknown applications as before.
    const bare = await call(h, 'POST', '/v1/applications', w.owner, { name: 'bare', project_id: w.project.id });
    expect((await call(h, 'GET', `/v1/configurations/${bare.body.id}`, w.owner)).body).toEqual([]);
    expectError(await call(h, 'GET', base(w), await h.user()), 403);
  });

  it('a variable of another application is 404 through this one', async () => {
    const w = await seedWorld(h);
    const other = await call(h, 'POST', '/v1/applications', w.owner, { name: 'other', project_id: w.project.id });
    expectError(await call(h, 'GET', `/v1/configurations/${other.body.id}/${w.plainVar.id}`, w.owner), 404);
    expectError(await call(h, 'DELETE', `/v1/configurations/${other.body.id}/${w.plainVar.id}`, w.owner), 404);
    expectError(await call(h, 'GET', `/v1/configurations/0190b6a4-7c3e-7000-8000-000000000000`, w.owner), 404);
  });
});

describe('bulk', () => {
  it('sets `variables`: creates new names, updates plain ones, skips existing secrets, reports invalid ones', async () => {
    const w = await seedWorld(h);
    const res = await call(h, 'POST', `${base(w)}/bulk`, w.owner, {
      variables: {
        NEW_ONE: 'a',
        log_level: 'warn',
        DATABASE_PASSWORD: 'overwrite?',
        '9BAD': 'x',
        'ALSO-BAD': 'y',
        HUGE: 'z'.repeat(40_000),
      },
    });
    expect(res.status).toBe(200);
    expect(res.body.created).toEqual(['NEW_ONE']);
    expect(res.body.updated).toEqual(['log_level']);
    expect(res.body.skipped).toEqual(['DATABASE_PASSWORD']);
    expect(res.body.errors.map((e: any) => e.name).sort()).toEqual(['9BAD', 'ALSO-BAD', 'HUGE']);
    for (const e of res.body.errors) expect(e.message).toEqual(expect.any(String));
    const values = await resolved(w);
    expect(values).toMatchObject({ NEW_ONE: 'a', LOG_LEVEL: 'warn', DATABASE_PASSWORD: w.secretVar.value });
    expect(values).not.toHaveProperty('9BAD');
  });

  it('writes its audit row in the statement of the change, and none when every name was skipped', async () => {
    const w = await seedWorld(h);
    const rows = () =>
      h.ctx.db
        .selectFrom('audit_log')
        .select(['action', 'resource_id', 'organization_id', 'after'])
        .where('resource_id', '=', w.app.id)
        .where('action', '=', 'POST /v1/configurations/:application_id/bulk')
        .execute();
    const skipped = await call(h, 'POST', `${base(w)}/bulk`, w.owner, { variables: { DATABASE_PASSWORD: 'overwrite?' } });
    expect(skipped.body).toMatchObject({ created: [], updated: [], skipped: ['DATABASE_PASSWORD'] });
    expect(await rows()).toEqual([]);
    const written = await call(h, 'POST', `${base(w)}/bulk`, w.owner, { variables: { FRESH: 'a-value' } });
    expect(written.body.created).toEqual(['FRESH']);
    const [row, ...more] = await rows();
    expect(more).toEqual([]);
    expect(row).toMatchObject({ organization_id: w.org.id });
    expect(JSON.stringify(row!.after)).not.toContain('a-value');
  });

  it("gives a secret to forks' previews only for an organization admin, and refuses a stranger first", async () => {
    const w = await seedWorld(h);
    const member = await h.user();
    expect((await call(h, 'POST', `/v1/organizations/${w.org.slug}/members`, w.owner, { username: member.username })).status).toBeLessThan(
      300,
    );
    const body = { variables: { FORK_TOKEN: 'x' }, secret: true, previews: true };
    const refused = await call(h, 'POST', `${base(w)}/bulk`, member, body);
    expect(refused.status).toBe(403);
    expect(refused.body.message).toContain('previews of pull requests from forks');
    expect((await call(h, 'POST', `${base(w)}/bulk`, await h.user(), body)).status).toBe(403);
    expect((await call(h, 'POST', `${base(w)}/bulk`, member, { variables: { FORK_TOKEN: 'x' }, secret: true })).body.created).toEqual([
      'FORK_TOKEN',
    ]);
    const byAdmin = await call(h, 'POST', `${base(w)}/bulk`, w.owner, { ...body, variables: { ADMIN_TOKEN: 'y' } });
    expect(byAdmin.body.created).toEqual(['ADMIN_TOKEN']);
  });

  it('parses dotenv `raw`: comments, blanks, export, quotes, escapes, multi-line values', async () => {
    const w = await seedWorld(h);
    const raw = [
      '# a comment',
      '',
      'export EXPORTED=yes',
      'PLAIN=hello world # trailing comment',
      "SINGLE='literal \\n $HOME # not a comment'",
      'DOUBLE="line1\\nline2\\ttab \\"quoted\\""',
      'MULTI="first',
      'second',
      'third"',
      '   SPACED = padded   ',
      'EMPTY=',
      'URL=postgres://u:p@h:5432/db?x=1#frag',
      'not a valid line',
      'BROKEN="never closed',
    ].join('\n');
    const res = await call(h, 'POST', `${base(w)}/bulk`, w.owner, { raw, buildtime: true });
    expect(res.status).toBe(200);
    expect(res.body.created.sort()).toEqual(['DOUBLE', 'EMPTY', 'EXPORTED', 'MULTI', 'PLAIN', 'SINGLE', 'SPACED', 'URL'].sort());
    expect(res.body.errors).toHaveLength(2);
    expect(res.body.errors.map((e: any) => e.message).join(' ')).toMatch(/line 13/);
    const values = await resolved(w);
    expect(values).toMatchObject({
      EXPORTED: 'yes',
      PLAIN: 'hello world',
      SINGLE: 'literal \\n $HOME # not a comment',
      DOUBLE: 'line1\nline2\ttab "quoted"',
      MULTI: 'first\nsecond\nthird',
      SPACED: 'padded',
      EMPTY: '',
      URL: 'postgres://u:p@h:5432/db?x=1#frag',
    });
    const list = await call(h, 'GET', base(w), w.owner);
    expect(list.body.find((v: any) => v.name === 'EXPORTED')).toMatchObject({ buildtime: true, secret: false });
  });

  it('marks everything secret when asked, and never echoes the values', async () => {
    const w = await seedWorld(h);
    const res = await call(h, 'POST', `${base(w)}/bulk`, w.owner, {
      raw: 'STRIPE_KEY=sk_live_abcdef123456\nOTHER_SECRET="zzz-top-secret"',
      variables: { THIRD: 'v3-secret-value' },
      secret: true,
    });
    expect(res.body).toEqual({ created: ['STRIPE_KEY', 'OTHER_SECRET', 'THIRD'], updated: [], skipped: [], errors: [] });
    const list = await call(h, 'GET', base(w), w.owner);
    for (const name of ['STRIPE_KEY', 'OTHER_SECRET', 'THIRD'])
      expect(list.body.find((v: any) => v.name === name)).toMatchObject({ secret: true, value: '**secret**' });
    for (const s of ['sk_live_abcdef123456', 'zzz-top-secret', 'v3-secret-value']) expect(list.raw + res.raw).not.toContain(s);
  });

  it('refuses a body that is not an object of strings', async () => {
    const w = await seedWorld(h);
    expectError(await call(h, 'POST', `${base(w)}/bulk`, w.owner, { variables: { A: 1 } }), 422);
    expectError(await call(h, 'POST', `${base(w)}/bulk`, w.owner, { raw: ['A=1'] }), 422);
    expectError(await call(h, 'POST', `${base(w)}/bulk`, w.owner, { vars: {} }), 422);
  });
});
