/**
 * Racing creations of one slug or name: exactly one 201, every other answer 409, one row.
 * Requests go over a real socket so they truly overlap in the server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { seedWorld, unique, type World } from './fixtures.js';

const RACERS = 8;

let h: Harness;
let baseUrl: string;
let w: World;
beforeAll(async () => {
  h = await createHarness();
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  const address = h.app.server.address();
  baseUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  w = await seedWorld(h);
});
afterAll(async () => {
  await h?.close();
});

async function race(path: string, user: TestUser, body: () => unknown) {
  const results = await Promise.all(
    Array.from({ length: RACERS }, () =>
      fetch(`${baseUrl}${path}`, {
        method: 'POST',
        headers: { ...user.headers, 'content-type': 'application/json' },
        body: JSON.stringify(body()),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as any })),
    ),
  );
  const statuses = results.map((r) => r.status).sort();
  expect(statuses).toEqual([201, ...Array(RACERS - 1).fill(409)]);
  for (const r of results.filter((x) => x.status === 409)) expect(r.body).toMatchObject({ status: 409, message: expect.any(String) });
  return results.find((r) => r.status === 201)!.body;
}

describe('concurrent creation of the same slug', () => {
  it('organizations', async () => {
    const slug = unique('race');
    let i = 0;
    const created = await race('/v1/organizations', await h.user(), () => ({ name: `Race ${i++}`, slug }));
    expect(created.slug).toBe(slug);
    const rows = await h.ctx.db.selectFrom('organizations').select('id').where('slug', '=', slug).execute();
    expect(rows).toHaveLength(1);
    const admins = await h.ctx.db.selectFrom('memberships').select('user_id').where('organization_id', '=', rows[0]!.id).execute();
    expect(admins).toHaveLength(1);
  });

  it('projects', async () => {
    await race('/v1/projects', w.owner, () => ({ name: 'Racing Project', organization_id: w.org.id }));
    const rows = await h.ctx.db
      .selectFrom('projects')
      .select('id')
      .where('organization_id', '=', w.org.id)
      .where('slug', '=', 'racing-project')
      .execute();
    expect(rows).toHaveLength(1);
    // The loser's transaction left no orphaned environment behind.
    const envs = await h.ctx.db
      .selectFrom('environments')
      .innerJoin('projects', 'projects.id', 'environments.project_id')
      .select('environments.id')
      .where('projects.organization_id', '=', w.org.id)
      .execute();
    const projects = await h.ctx.db.selectFrom('projects').select('id').where('organization_id', '=', w.org.id).execute();
    expect(envs).toHaveLength(projects.length);
  });

  it('applications', async () => {
    await race('/v1/applications', w.owner, () => ({ name: 'Racer', project_id: w.project.id }));
    const rows = await h.ctx.db
      .selectFrom('applications')
      .select('id')
      .where('project_id', '=', w.project.id)
      .where('slug', '=', 'racer')
      .execute();
    expect(rows).toHaveLength(1);
  });

  it('configuration names (case-insensitively)', async () => {
    let i = 0;
    await race(`/v1/configurations/${w.app.id}`, w.owner, () => ({ name: i++ % 2 ? 'RACE_VAR' : 'race_var', value: `v${i}` }));
    const rows = await h.ctx.db
      .selectFrom('config_vars')
      .select('id')
      .where('scope_id', '=', w.app.id)
      .where((eb) => eb.fn('lower', ['name']), '=', 'race_var')
      .execute();
    expect(rows).toHaveLength(1);
  });
});
