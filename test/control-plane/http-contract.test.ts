/**
 * The HTTP contract every route shares: the OpenAPI 3.1 document covers the route table,
 * /docs renders, and errors (unknown routes, wrong methods, media types, malformed ids)
 * are `{status, message}` without internals.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { createDb } from '../../src/platform/db/database.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { call, expectError, seedWorld } from './fixtures.js';

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => {
  await h?.close();
});

/** Routes deliberately absent from the document. */
const UNDOCUMENTED = new Set(['GET /v1/openapi.json']);

describe('OpenAPI', () => {
  it('/v1/openapi.json is OpenAPI 3.1 and documents every route of the route table', async () => {
    const res = await call(h, 'GET', '/v1/openapi.json');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/application\/json/);
    const doc = res.body;
    expect(doc.openapi).toMatch(/^3\.1\./);
    expect(doc.info).toMatchObject({ title: expect.any(String), version: expect.any(String) });
    const missing: string[] = [];
    for (const route of h.app.routeTable) {
      const key = `${route.method} ${route.url}`;
      if (UNDOCUMENTED.has(key)) continue;
      const op = doc.paths?.[route.url.replace(/:(\w+)/g, '{$1}')]?.[route.method.toLowerCase()];
      if (!op) {
        missing.push(`${key}: not in the document`);
        continue;
      }
      // Every operation says what it answers (a redirect for the browser's sign-in steps); JSON routes describe their success body.
      // A WebSocket route's success is its 101 (Switching Protocols): no body.
      const success = Object.keys(op.responses ?? {}).filter(
        (s) => s.startsWith('2') || s === '101' || (route.public && s.startsWith('3')),
      );
      if (success.length === 0) missing.push(`${key}: no success response documented`);
      if (route.method !== 'DELETE' && !route.public && !success.includes('101') && !success.some((s) => op.responses[s].content))
        missing.push(`${key}: success response has no schema`);
      if (!route.public && !op.responses?.['401']) missing.push(`${key}: 401 not documented`);
      for (const param of route.url.matchAll(/:(\w+)/g)) {
        if (!op.parameters?.some((p: any) => p.in === 'path' && p.name === param[1]))
          missing.push(`${key}: path parameter ${param[1]} not documented`);
      }
    }
    expect(missing, missing.join('\n')).toEqual([]);
    expect(doc.components.securitySchemes).toHaveProperty('apiKey');
  });

  it('/docs renders the document', async () => {
    const res = await h.app.inject({ method: 'GET', url: '/docs' });
    const page =
      res.statusCode === 302 ? await h.app.inject({ method: 'GET', url: String(res.headers.location).replace(/^\.\//, '/docs/') }) : res;
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/text\/html/);
    expect(page.body).toMatch(/swagger-ui/i);
    const json = await h.app.inject({ method: 'GET', url: '/docs/json' });
    expect(json.statusCode).toBe(200);
    expect(json.json().openapi).toMatch(/^3\.1\./);
  });
});

describe('errors', () => {
  it('an unknown route is 404 {status, message}', async () => {
    const res = await call(h, 'GET', '/v1/no-such-thing');
    expectError(res, 404);
    expect(res.headers['content-type']).toMatch(/application\/json/);
    expectError(await call(h, 'GET', '/nowhere'), 404);
  });

  it('a wrong method is 405 with an Allow header', async () => {
    const res = await call(h, 'PUT', '/v1/organizations');
    expectError(res, 405);
    expect(String(res.headers.allow).split(/,\s*/).sort()).toEqual(['GET', 'POST']);
    const user = await h.user();
    const del = await call(h, 'DELETE', '/v1/projects', user);
    expectError(del, 405);
  });

  it('an unsupported media type is 415', async () => {
    const user = await h.user();
    const res = await h.app.inject({
      method: 'POST',
      url: '/v1/organizations',
      headers: { ...user.headers, 'content-type': 'application/xml' },
      payload: '<name>x</name>',
    });
    expect(res.statusCode).toBe(415);
    expect(res.json()).toMatchObject({ status: 415, message: expect.any(String) });
  });

  it('malformed ids and slugs in paths answer 404, like unknown ones', async () => {
    const w = await seedWorld(h);
    for (const url of [
      '/v1/configurations/not-a-uuid',
      `/v1/configurations/${w.app.id}/123`,
      '/v1/organizations/UPPER_case',
      `/v1/applications/${w.org.slug}/${w.project.slug}/-bad-`,
      `/v1/organizations/${'a'.repeat(64)}`,
    ])
      expectError(await call(h, 'GET', url, w.owner), 404);
  });

  it('validation errors list their fields; no error carries a stack or SQL', async () => {
    const user = await h.user();
    const res = await call(h, 'POST', '/v1/organizations', user, { name: 5, extra: true });
    expectError(res, 422);
    expect(res.body.errors).toEqual(
      expect.arrayContaining([expect.objectContaining({ field: expect.any(String), message: expect.any(String) })]),
    );
    for (const text of [res.raw, (await call(h, 'POST', '/v1/projects', user, { name: 'x', organization_id: 'nope' })).raw]) {
      expect(text).not.toMatch(/\n\s+at |node_modules|select |insert into/i);
    }
  });

  it('GET /integrations/health is public and reports the database and each component', async () => {
    const res = await call(h, 'GET', '/v1/integrations/health');
    expect(res.status).toBe(200);
    // This harness runs neither a job store nor a runtime: absent, not down.
    expect(res.body).toEqual({
      status: 'ok',
      database: 'ok',
      disk: 'ok',
      components: { database: 'ok', job_store: 'absent', runtime: 'absent', edge: 'absent' },
    });
  });

  it('GET /integrations/health answers 503 when the database does not answer', async () => {
    // Nothing listens on port 1: the same app, with a database that is down.
    const deadDb = createDb('postgres://nobody:nothing@127.0.0.1:1/none', 1);
    const app = await buildApp({ ...h.ctx, db: deadDb }, { logger: false });
    try {
      const res = await app.inject({ method: 'GET', url: '/v1/integrations/health' });
      expect(res.statusCode).toBe(503);
      expect(res.json()).toEqual({
        status: 'unavailable',
        database: 'unreachable',
        disk: 'ok',
        components: { database: 'down', job_store: 'absent', runtime: 'absent', edge: 'absent' },
      });
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    } finally {
      await app.close();
      await deadDb.destroy();
    }
  });
});

describe('JSON bodies', () => {
  it('an empty body with Content-Type: application/json is "no body": fine where none is needed', async () => {
    const w = await seedWorld(h);
    const bob = await h.user();
    await call(h, 'POST', `/v1/organizations/${w.org.slug}/members`, w.owner, { username: bob.username });
    const res = await h.app.inject({
      method: 'POST',
      url: `/v1/organizations/${w.org.slug}/members/${bob.id}/toggle-admin`,
      headers: { ...w.owner.headers, 'content-type': 'application/json' },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ ok: true, admin: true });
    const del = await h.app.inject({
      method: 'DELETE',
      url: `/v1/configurations/${w.app.id}/${w.plainVar.id}`,
      headers: { ...w.owner.headers, 'content-type': 'application/json' },
      payload: '  ',
    });
    expect(del.statusCode).toBe(200);
  });

  it('where a body is required, an empty one is 422', async () => {
    const user = await h.user();
    const res = await h.app.inject({
      method: 'POST',
      url: '/v1/organizations',
      headers: { ...user.headers, 'content-type': 'application/json' },
    });
    expectError({ status: res.statusCode, body: res.json() }, 422);
  });

  it('prototype poisoning is refused (400)', async () => {
    const user = await h.user();
    const res = await h.app.inject({
      method: 'POST',
      url: '/v1/organizations',
      headers: { ...user.headers, 'content-type': 'application/json' },
      payload: '{"name":"Poison","__proto__":{"admin":true}}',
    });
    expectError({ status: res.statusCode, body: res.json() }, 400);
  });
});
