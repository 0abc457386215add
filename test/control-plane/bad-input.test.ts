/**
 * Every POST/PATCH route of the route table, fed malformed JSON (400), oversize bodies
 * (413), and bodies that break its schema (422): wrong top-level type, missing required
 * fields, unknown fields, wrong field types, over-long names, invalid slugs. Each answer
 * is `{status, message}` with the HTTP status, and the database is left exactly as it was.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RouteEntry } from '../../src/app.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { snapshotTables } from './fixtures.js';
import { fillPath, sampleBody, seedRouteWorld, type RouteWorld } from './route-fixtures.js';

type Schema = Record<string, any>;

/**
 * Routes that authenticate the raw request (an HMAC signature over the body) before
 * parsing it: an unsigned request is refused (401/403) before its JSON is looked at.
 */
const CREDENTIALS_CHECKED_BEFORE_PARSING = new Set(['POST /v1/integrations/github/hooks']);

let h: Harness;
let world: RouteWorld;
let headers: Record<string, string>;
let doc: any;

beforeAll(async () => {
  h = await createHarness();
  world = await seedRouteWorld(h);
  // A site admin owner, so site-admin routes are exercised past their permission check too.
  await h.ctx.db.updateTable('users').set({ is_admin: true }).where('id', '=', world.owner.id).execute();
  headers = world.owner.headers;
  doc = h.app.swagger();
});
afterAll(async () => {
  await h?.close();
});

const key = (r: RouteEntry) => `${r.method} ${r.url}`;

function bodySchema(route: RouteEntry): Schema | undefined {
  const op = doc.paths?.[route.url.replace(/:(\w+)/g, '{$1}')]?.[route.method.toLowerCase()];
  return op?.requestBody?.content?.['application/json']?.schema;
}

/** A value of a type the property does not accept. */
function wrongValue(prop: Schema): unknown {
  if (prop.type === 'object' || prop.patternProperties || prop.additionalProperties !== undefined) return 12345;
  if (prop.type === 'array') return 'not-an-array';
  return { wrong: [1] };
}

interface Case {
  name: string;
  payload: string;
  contentType?: string;
  expect: number[];
}

function casesFor(route: RouteEntry): Case[] {
  const json = (name: string, body: unknown): Case => ({ name, payload: JSON.stringify(body), expect: [422] });
  const cases: Case[] = [
    { name: 'malformed JSON', payload: '{"name": "x",', expect: [400] },
    { name: 'oversize body', payload: JSON.stringify({ name: 'x'.repeat(h.ctx.config.BODY_LIMIT_BYTES + 10) }), expect: [413] },
  ];
  const schema = bodySchema(route);
  if (!schema) return cases;
  if (schema.type !== 'object') {
    cases.push(json('a number instead of the body', 42));
    return cases;
  }
  const sample = (sampleBody(route, world) ?? {}) as Record<string, unknown>;
  const props: Record<string, Schema> = schema.properties ?? {};
  cases.push(json('an array instead of an object', []));
  if ((schema.required ?? []).length > 0 || schema.minProperties > 0) cases.push(json('missing required fields', {}));
  // Ancla's routes ignore unknown fields (named in a Warning header): test/ancla-contract checks them.
  if (schema.additionalProperties === false && !route.lenient) cases.push(json('an unknown field', { ...sample, __unknown_field__: true }));
  for (const [name, prop] of Object.entries(props)) cases.push(json(`wrong type for ${name}`, { ...sample, [name]: wrongValue(prop) }));
  if (props.name) cases.push(json('an over-long name', { ...sample, name: 'n'.repeat(300) }));
  if (props.slug) cases.push(json('an invalid slug', { ...sample, slug: 'Not A Slug!' }));
  if (props.slug) cases.push(json('an over-long slug', { ...sample, slug: 'a'.repeat(64) }));
  return cases;
}

describe('bad input on every POST/PATCH route', () => {
  it('gets a 4xx {status, message} and changes nothing', async () => {
    const routes = h.app.routeTable.filter((r) => r.method === 'POST' || r.method === 'PATCH');
    expect(routes.length).toBeGreaterThan(10);
    const failures: string[] = [];
    let checked = 0;
    for (const route of routes) {
      const url = fillPath(route, world);
      const before = await snapshotTables(h);
      for (const c of casesFor(route)) {
        if (CREDENTIALS_CHECKED_BEFORE_PARSING.has(key(route))) c.expect = [...c.expect, 401, 403];
        const res = await h.app.inject({
          method: route.method as 'POST',
          url,
          payload: c.payload,
          headers: { ...headers, 'content-type': c.contentType ?? 'application/json' },
        });
        checked++;
        let body: any;
        try {
          body = res.json();
        } catch {
          body = null;
        }
        const shapeOk = body && body.status === res.statusCode && typeof body.message === 'string' && body.message.length > 0;
        if (!c.expect.includes(res.statusCode) || !shapeOk) {
          failures.push(`${key(route)} ${c.name}: expected ${c.expect.join('/')}, got ${res.statusCode} ${res.body.slice(0, 160)}`);
        }
      }
      const after = await snapshotTables(h);
      const changed = Object.keys(after).filter((t) => JSON.stringify(after[t]) !== JSON.stringify(before[t]));
      if (changed.length > 0) failures.push(`${key(route)}: refused requests changed table(s) ${changed.join(', ')}`);
    }
    expect(failures, failures.join('\n')).toEqual([]);
    console.log(`bad-input: ${checked} requests over ${routes.length} routes`);
    expect(checked).toBeGreaterThan(routes.length * 2);
  });
});
