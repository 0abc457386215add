/**
 * Issue 20, the low findings on bad input: paths Fastify refuses before routing, page
 * numbers PostgreSQL cannot take, and bodies sent to routes that take none. Each answer is
 * `{status, message}` with the HTTP status, and nothing is stored.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RouteEntry } from '../../src/app.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { call, expectError, snapshotTables } from '../control-plane/fixtures.js';
import { fillPath, seedRouteWorld, type RouteWorld } from '../control-plane/route-fixtures.js';

let h: Harness;
let world: RouteWorld;
let doc: any;

beforeAll(async () => {
  h = await createHarness();
  world = await seedRouteWorld(h);
  doc = h.app.swagger();
});
afterAll(async () => {
  await h?.close();
});

const operation = (route: RouteEntry) => doc.paths?.[route.url.replace(/:(\w+)/g, '{$1}')]?.[route.method.toLowerCase()];
const key = (r: RouteEntry) => `${r.method} ${r.url}`;

describe('paths Fastify refuses before routing answer in our shape', () => {
  it('a path that does not percent-decode (%ff): 400 {status,message}', async () => {
    expectError(await call(h, 'GET', '/v1/organizations/%ff', world.owner), 400);
    expectError(await call(h, 'GET', `/v1/applications/%ff/settings`, world.owner), 400);
  });

  it('a path parameter over 100 characters: 414 {status,message}', async () => {
    expectError(await call(h, 'GET', `/v1/organizations/${'a'.repeat(150)}`, world.owner), 414);
    expectError(await call(h, 'GET', `/v1/applications/${'b'.repeat(101)}/settings`, world.owner), 414);
  });
});

describe('pagination is bounded on every paginated list', () => {
  const paginated = () =>
    h.app.routeTable.filter(
      (r) => r.method === 'GET' && (operation(r)?.parameters ?? []).some((p: any) => p.in === 'query' && p.name === 'page'),
    );

  it('finds the paginated lists (releases, images, deployments, environment deploys)', () => {
    const urls = paginated().map((r) => r.url);
    expect(urls).toEqual(expect.arrayContaining(['/v1/releases/:application_id', '/v1/images/:application_id']));
    expect(urls.length).toBeGreaterThanOrEqual(4);
  });

  it('a huge page number or per_page is a 422, never a 500', async () => {
    const failures: string[] = [];
    const siteAdmin = await h.user({ admin: true });
    for (const route of paginated()) {
      const url = fillPath(route, world);
      const caller = route.url === '/v1/audit-log' ? siteAdmin : world.owner;
      for (const query of [
        'page=1e20',
        'page=100000000000',
        'page=100001',
        'per_page=1e20',
        'per_page=101',
        'page=0',
        'page=-1',
        'page=abc',
      ]) {
        const res = await call(h, 'GET', `${url}?${query}`, caller);
        if (res.status !== 422 || res.body?.status !== 422 || typeof res.body?.message !== 'string')
          failures.push(`${key(route)}?${query}: ${res.status} ${res.raw.slice(0, 120)}`);
      }
      const last = await call(h, 'GET', `${url}?page=100000&per_page=100`, caller);
      // An array, or an object holding it (`items`; the overview's `applications`).
      const items = Array.isArray(last.body) ? last.body : (last.body?.items ?? last.body?.applications);
      if (last.status !== 200 || items?.length !== 0) failures.push(`${key(route)}?page=100000: ${last.status} ${last.raw.slice(0, 120)}`);
    }
    expect(failures, failures.join('\n')).toEqual([]);
  });
});

describe('routes that take no body refuse one', () => {
  const bodiless = () =>
    h.app.routeTable.filter((r) => ['POST', 'PUT', 'PATCH', 'DELETE'].includes(r.method) && !r.public && !operation(r)?.requestBody);

  it('[], 123, "text" and unknown fields: 422 and nothing stored; no body or {} still accepted', async () => {
    const routes = bodiless();
    expect(routes.length).toBeGreaterThan(3);
    const failures: string[] = [];
    for (const route of routes) {
      const url = fillPath(route, world);
      const before = await snapshotTables(h);
      // Ancla's routes ignore unknown fields (test/ancla-contract); what is no object is still refused.
      for (const payload of ['[]', '123', '"text"', ...(route.lenient ? [] : ['{"unexpected":true}']), 'null']) {
        const res = await h.app.inject({
          method: route.method as 'POST',
          url,
          payload,
          headers: { ...world.owner.headers, 'content-type': 'application/json' },
        });
        let body: any = null;
        try {
          body = res.json();
        } catch {
          /* not JSON: reported below */
        }
        if (res.statusCode !== 422 || body?.status !== 422)
          failures.push(`${key(route)} ${payload}: ${res.statusCode} ${res.body.slice(0, 120)}`);
      }
      const after = await snapshotTables(h);
      const changed = Object.keys(after).filter((t) => JSON.stringify(after[t]) !== JSON.stringify(before[t]));
      if (changed.length > 0) failures.push(`${key(route)}: refused bodies changed ${changed.join(', ')}`);
    }
    expect(failures, failures.join('\n')).toEqual([]);
    console.log(`bodiless routes checked: ${routes.map(key).join(', ')}`);
  });

  it('an empty object is still accepted where no body is needed', async () => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/v1/auth/logout',
      payload: '{}',
      headers: { ...world.owner.headers, 'content-type': 'application/json' },
    });
    expect(res.statusCode, res.body).toBeLessThan(300);
  });
});
