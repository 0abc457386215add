import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../helpers/harness.js';
import { call, expectError, seedWorld, unique } from './fixtures.js';

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => {
  await h?.close();
});

describe('projects', () => {
  it('create, detail and list, with application counts; every project starts with production', async () => {
    const owner = await h.user();
    const org = await call(h, 'POST', '/v1/organizations', owner, { name: unique('Org') });
    const created = await call(h, 'POST', '/v1/projects', owner, { name: 'Storefront', organization_id: org.body.id });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.any(String),
      name: 'Storefront',
      slug: 'storefront',
      organization_id: org.body.id,
      organization_slug: org.body.slug,
      organization_name: org.body.name,
      application_count: 0,
      created: expect.any(String),
      updated: expect.any(String),
    });
    const envs = await h.ctx.db.selectFrom('environments').selectAll().where('project_id', '=', created.body.id).execute();
    expect(envs.map((e) => [e.slug, e.env_type])).toEqual([['production', 'production']]);

    await call(h, 'POST', '/v1/applications', owner, { name: 'web', project_id: created.body.id });
    const detail = await call(h, 'GET', `/v1/projects/${org.body.slug}/storefront`, owner);
    expect(detail.body).toMatchObject({ id: created.body.id, application_count: 1, organization_name: org.body.name });
    const list = await call(h, 'GET', '/v1/projects', owner);
    expect(list.body).toEqual([
      {
        id: created.body.id,
        name: 'Storefront',
        slug: 'storefront',
        organization_id: org.body.id,
        organization_slug: org.body.slug,
        application_count: 1,
        created: created.body.created,
      },
    ]);
  });

  it('slugs are unique per organization only', async () => {
    const a = await seedWorld(h);
    const b = await seedWorld(h);
    expectError(await call(h, 'POST', '/v1/projects', a.owner, { name: 'Other', slug: a.project.slug, organization_id: a.org.id }), 409);
    const same = await call(h, 'POST', '/v1/projects', b.owner, { name: 'Web again', slug: 'web2', organization_id: b.org.id });
    expect(same.status).toBe(201);
    const again = await call(h, 'POST', '/v1/projects', a.owner, { name: 'Web again', slug: 'web2', organization_id: a.org.id });
    expect(again.status).toBe(201);
  });

  it('outsiders get 403; unknown organizations and projects 404', async () => {
    const w = await seedWorld(h);
    const outsider = await h.user();
    expectError(await call(h, 'POST', '/v1/projects', outsider, { name: 'Sneaky', organization_id: w.org.id }), 403);
    expectError(await call(h, 'GET', `/v1/projects/${w.org.slug}/${w.project.slug}`, outsider), 403);
    expectError(await call(h, 'GET', `/v1/projects/${w.org.slug}/nope`, w.owner), 404);
    expectError(
      await call(h, 'POST', '/v1/projects', w.owner, { name: 'X', organization_id: '0190b6a4-7c3e-7000-8000-000000000000' }),
      404,
    );
    expect((await call(h, 'GET', '/v1/projects', outsider)).body).toEqual([]);
  });

  it('the list: whole when no page is asked, else pages with a Link to the next; ?organization= narrows it', async () => {
    const owner = await h.user();
    const mine = await call(h, 'POST', '/v1/organizations', owner, { name: unique('Paged') });
    const other = await call(h, 'POST', '/v1/organizations', owner, { name: unique('Other') });
    for (const name of ['c', 'a', 'e', 'b', 'd']) await call(h, 'POST', '/v1/projects', owner, { name, organization_id: mine.body.id });
    await call(h, 'POST', '/v1/projects', owner, { name: 'z', organization_id: other.body.id });
    const slugs = (res: { body: Array<{ slug: string }> }) => res.body.map((p) => p.slug);

    const whole = await call(h, 'GET', `/v1/projects?organization=${mine.body.slug}`, owner);
    expect(slugs(whole)).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(whole.headers.link).toBeUndefined();
    expect((await call(h, 'GET', '/v1/projects', owner)).body).toHaveLength(6);

    const first = await call(h, 'GET', `/v1/projects?organization=${mine.body.slug}&per_page=2`, owner);
    expect(slugs(first)).toEqual(['a', 'b']);
    expect(first.headers.link).toBe(`</v1/projects?page=2&per_page=2&organization=${mine.body.slug}>; rel="next"`);
    const second = await call(h, 'GET', `/v1/projects?organization=${mine.body.slug}&page=2&per_page=2`, owner);
    const last = await call(h, 'GET', `/v1/projects?organization=${mine.body.slug}&page=3&per_page=2`, owner);
    expect(slugs(last)).toEqual(['e']);
    // The whole list (written by PostgreSQL) and the pages (serialized by the server) say the same.
    expect(whole.body).toEqual([...first.body, ...second.body, ...last.body]);
    expect(whole.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(last.headers.link).toBeUndefined();
    expect(slugs(await call(h, 'GET', '/v1/projects?page=1', owner))).toHaveLength(6);

    // Another's organization lists nothing; bad pages are refused before anything runs.
    expect((await call(h, 'GET', `/v1/projects?organization=${mine.body.slug}`, await h.user())).body).toEqual([]);
    expectError(await call(h, 'GET', '/v1/projects?per_page=101', owner), 422);
    expectError(await call(h, 'GET', '/v1/projects?page=0', owner), 422);
  });
});
