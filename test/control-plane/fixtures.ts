import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { expect } from 'vitest';
import type { Harness, TestUser } from '../helpers/harness.js';

/** One HTTP call through the app, JSON in and out. */
export async function call(
  h: Harness,
  method: string,
  url: string,
  user?: TestUser | null,
  payload?: unknown,
  headers: Record<string, string> = {},
) {
  const res = await h.app.inject({
    method: method as 'GET',
    url,
    headers: { ...(user ? user.headers : {}), ...headers },
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
  let body: any = null;
  try {
    body = res.json();
  } catch {
    body = res.body;
  }
  return { status: res.statusCode, body, headers: res.headers, raw: res.body };
}

/** Asserts the error shape of decisions.md: `{status, message}` with status = HTTP status. */
export function expectError(res: { status: number; body: any }, status: number) {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body).toMatchObject({ status, message: expect.any(String) });
  expect(res.body.message.length).toBeGreaterThan(0);
}

export const unique = (prefix: string) => `${prefix}-${randomBytes(3).toString('hex')}`;

export interface World {
  owner: TestUser;
  org: { id: string; slug: string };
  project: { id: string; slug: string };
  app: { id: string; slug: string };
  plainVar: { id: string; name: string };
  secretVar: { id: string; name: string; value: string };
}

/** An organization with a project, an application and two variables (one secret), owned by a fresh user. */
export async function seedWorld(h: Harness, owner?: TestUser): Promise<World> {
  owner ??= await h.user();
  const org = await call(h, 'POST', '/v1/organizations', owner, { name: unique('Org') });
  expect(org.status, JSON.stringify(org.body)).toBe(201);
  const project = await call(h, 'POST', '/v1/projects', owner, { name: 'Web', organization_id: org.body.id });
  expect(project.status, JSON.stringify(project.body)).toBe(201);
  const app = await call(h, 'POST', '/v1/applications', owner, { name: 'API', project_id: project.body.id });
  expect(app.status, JSON.stringify(app.body)).toBe(201);
  const plain = await call(h, 'POST', `/v1/configurations/${app.body.id}`, owner, { name: 'LOG_LEVEL', value: 'debug' });
  expect(plain.status).toBe(201);
  const secretValue = `s3cr3t-${randomBytes(12).toString('hex')}`;
  const secret = await call(h, 'POST', `/v1/configurations/${app.body.id}`, owner, {
    name: 'DATABASE_PASSWORD',
    value: secretValue,
    secret: true,
  });
  expect(secret.status).toBe(201);
  return {
    owner,
    org: { id: org.body.id, slug: org.body.slug },
    project: { id: project.body.id, slug: project.body.slug },
    app: { id: app.body.id, slug: app.body.slug },
    plainVar: { id: plain.body.id, name: 'LOG_LEVEL' },
    secretVar: { id: secret.body.id, name: 'DATABASE_PASSWORD', value: secretValue },
  };
}

/**
 * Every row of every table in the public schema (migration bookkeeping aside), as text:
 * compared before and after a refused request to prove it changed nothing.
 */
export async function snapshotTables(h: Harness): Promise<Record<string, string[]>> {
  const { rows: tables } = await sql<{ table_name: string }>`
    select table_name from information_schema.tables
    where table_schema = 'public' and table_type = 'BASE TABLE'
      and table_name not like 'kysely_%' order by table_name`.execute(h.ctx.db);
  const snapshot: Record<string, string[]> = {};
  for (const { table_name } of tables) {
    // Bookkeeping that legitimately changes on any authenticated call.
    if (table_name === 'login_failures') continue;
    // last_used_at (and _address) of an API key moves on every authenticated call: not a change of state.
    // A refused request leaves its own audit row (denied): the record of the refusal, not a change; an API key's
    // first use of the day leaves a sign-in row (USE): the record of who signed in, not a change either.
    const refusals = table_name === 'audit_log' ? sql`where not t.denied and t.action not like 'USE %'` : sql``;
    const { rows } = await sql<{
      r: string;
    }>`select (to_jsonb(t) - 'last_used_at' - 'last_used_address')::text as r from ${sql.table(table_name)} t ${refusals}`.execute(
      h.ctx.db,
    );
    snapshot[table_name] = rows.map((x) => x.r).sort();
  }
  return snapshot;
}
