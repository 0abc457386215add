/**
 * The other spellings of the API's paths (issue 29): `/api/v1/...` as an alias of `/v1/...` and a
 * trailing slash on any route, answered in place exactly as the canonical call; the OpenAPI
 * document lists each operation once; a request no route matches is 404 or 405 whatever its body.
 * Over real HTTP against a listening server.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DASHBOARD_DIST } from '../../src/dashboard/serve.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { seedWorld, unique, type World } from './fixtures.js';

const METRICS_TOKEN = 'metrics-token-for-the-alias-test';

let h: Harness;
let base: string;
let w: World;
let admin: TestUser;

beforeAll(async () => {
  h = await createHarness({ METRICS_TOKEN });
  base = await h.app.listen({ host: '127.0.0.1', port: 0 });
  w = await seedWorld(h);
  admin = await h.user({ admin: true });
}, 60_000);
afterAll(async () => {
  await h?.close();
});

interface Answer {
  status: number;
  body: unknown;
  headers: Headers;
}

async function send(method: string, path: string, user?: TestUser | null, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(base + path, {
    method,
    headers: {
      ...(user ? user.headers : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    /* not JSON: compared as text */
  }
  return { status: res.status, body: parsed, headers: res.headers } satisfies Answer;
}

/** A canonical path and the three other ways a client may write it. */
const withSlash = (path: string) => {
  const [route, query] = path.split('?');
  return `${route}/${query === undefined ? '' : `?${query}`}`;
};
const SPELLINGS: Array<[string, (path: string) => string]> = [
  ['canonical', (p) => p],
  ['/api alias', (p) => `/api${p}`],
  ['trailing slash', withSlash],
  ['/api alias with a trailing slash', (p) => `/api${withSlash(p)}`],
];

/** Replaces the fields a create or an update makes anew on every call (ids, names, times). */
function withoutFresh(body: unknown, fresh: string[]): unknown {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return body;
  return Object.fromEntries(Object.entries(body).map(([k, v]) => [k, fresh.includes(k) ? '<fresh>' : v]));
}

interface Row {
  name: string;
  /** One call, with the path spelled by `spell`; `i` tells the spellings apart where each needs its own record. */
  call: (spell: (path: string) => string, i: number) => Promise<Answer>;
  status: number;
  /** Fields that differ between calls by nature (a new id, an update time). */
  fresh?: string[];
}

const rows: Row[] = [
  { name: 'GET a list', status: 200, call: (s) => send('GET', s('/v1/workspaces'), w.owner) },
  { name: 'GET one (path parameter)', status: 200, call: (s) => send('GET', s(`/v1/workspaces/${w.org.slug}`), w.owner) },
  {
    name: 'GET with two path parameters and a query',
    status: 200,
    call: (s) => send('GET', s(`/v1/applications/${w.org.slug}/${w.project.slug}?per_page=1`), w.owner),
  },
  { name: 'GET an unknown record', status: 404, call: (s) => send('GET', s('/v1/workspaces/no-such-workspace'), w.owner) },
  { name: 'GET without credentials', status: 401, call: (s) => send('GET', s('/v1/workspaces')) },
  {
    name: 'POST create',
    status: 201,
    fresh: ['id', 'name', 'slug', 'created', 'updated'],
    call: (s) => send('POST', s('/v1/workspaces'), w.owner, { name: unique('Alias') }),
  },
  { name: 'POST an invalid body', status: 422, call: (s) => send('POST', s('/v1/workspaces'), w.owner, { name: 5 }) },
  {
    name: 'PATCH',
    status: 200,
    fresh: ['updated'],
    call: (s) => send('PATCH', s(`/v1/workspaces/${w.org.slug}/projects/${w.project.slug}`), w.owner, { name: 'Renamed' }),
  },
  {
    name: 'PUT',
    status: 200,
    call: (s) => send('PUT', s(`/v1/organizations/${w.org.slug}/pipeline-limits`), admin, { build_timeout_seconds: 900 }),
  },
  {
    name: 'DELETE (one member per spelling)',
    status: 200,
    call: async (s, i) => {
      const member = await h.user({ username: `alias-member-${i}-${unique('m')}` });
      const added = await send('POST', `/v1/workspaces/${w.org.slug}/members`, w.owner, { username: member.username });
      expect(added.status, JSON.stringify(added.body)).toBe(201);
      return send('DELETE', s(`/v1/workspaces/${w.org.slug}/members/${member.id}`), w.owner);
    },
  },
  { name: 'the OpenAPI document', status: 200, call: (s) => send('GET', s('/v1/openapi.json')) },
];

describe('/api/v1 and trailing slashes answer as the canonical /v1 path', () => {
  for (const row of rows) {
    it(row.name, async () => {
      const answers: Array<[string, Answer]> = [];
      for (const [i, [spelling, spell]] of SPELLINGS.entries()) answers.push([spelling, await row.call(spell, i)]);
      const [, canonical] = answers[0]!;
      expect(canonical.status, JSON.stringify(canonical.body)).toBe(row.status);
      for (const [spelling, answer] of answers.slice(1)) {
        expect(answer.status, `${spelling}: ${JSON.stringify(answer.body)}`).toBe(canonical.status);
        expect(withoutFresh(answer.body, row.fresh ?? []), spelling).toEqual(withoutFresh(canonical.body, row.fresh ?? []));
      }
    });
  }

  it('an event stream (SSE) opens the same way under every spelling', async () => {
    for (const [spelling, spell] of SPELLINGS) {
      const controller = new AbortController();
      const res = await fetch(base + spell(`/v1/applications/${w.app.id}/events`), {
        headers: { ...w.owner.headers, accept: 'text/event-stream' },
        signal: controller.signal,
      });
      try {
        expect(res.status, spelling).toBe(200);
        expect(res.headers.get('content-type'), spelling).toMatch(/^text\/event-stream/);
        const first = await res.body!.getReader().read();
        expect(new TextDecoder().decode(first.value), spelling).toBe('retry: 2000\n\n');
      } finally {
        controller.abort();
      }
    }
  });

  it('only /api/v1 itself is an alias: /api/v10 and /api/v1x are unknown', async () => {
    for (const path of ['/api/v10/workspaces', '/api/v1x/workspaces', '/api/workspaces', '/api']) {
      const res = await send('GET', path, w.owner);
      expect(res.status, path).toBe(404);
      expect(res.body).toEqual({ status: 404, message: `Route GET ${path} not found` });
    }
  });

  it('the login flood guard counts every spelling together (an alias is not a fresh allowance)', async () => {
    const member = await h.user();
    const login = { email: member.email, password: member.password };
    const statuses: number[] = [];
    // The route allows 30 logins a minute per (address, account): the 31st is refused whichever spelling it uses.
    for (let i = 0; i < 31; i++) statuses.push((await send('POST', SPELLINGS[i % 4]![1]('/v1/auth/login'), null, login)).status);
    expect(
      statuses.slice(0, 30).every((s) => s === 200),
      statuses.join(' '),
    ).toBe(true);
    expect(statuses[30]).toBe(429);
  });

  it('audit entries and metrics name the canonical route; the request log what the client sent', async () => {
    const created = await send('POST', '/api/v1/workspaces/', w.owner, { name: unique('Audited') });
    expect(created.status).toBe(201);
    const slug = (created.body as { slug: string }).slug;
    const audit = await send('GET', `/api/v1/organizations/${slug}/audit-log/`, w.owner);
    expect(audit.status).toBe(200);
    const actions = (audit.body as { items: Array<{ action: string }> }).items.map((e) => e.action);
    expect(actions).toContain('POST /v1/workspaces');

    const metrics = await send('GET', '/metrics', null, undefined, { authorization: `Bearer ${METRICS_TOKEN}` });
    expect(metrics.status).toBe(200);
    const routes = new Set([...String(metrics.body).matchAll(/slipway_http_requests_total\{[^}]*route="([^"]*)"/g)].map((m) => m[1]!));
    expect(routes).toContain('/v1/workspaces');
    expect([...routes].filter((r) => r.startsWith('/api') || (r.length > 1 && r.endsWith('/')))).toEqual([]);

    expect(h.logs()).toContain('"url":"/api/v1/workspaces/"');
  });
});

describe('the OpenAPI document', () => {
  it('lists each operation once, at its canonical path', async () => {
    const doc = (await send('GET', '/v1/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
    const paths = Object.keys(doc.paths);
    expect(paths.filter((p) => p.startsWith('/api') || (p.length > 1 && p.endsWith('/')))).toEqual([]);
    const documented = paths
      .filter((p) => p.startsWith('/v1/'))
      .flatMap((p) => Object.keys(doc.paths[p]!).map((method) => `${method.toUpperCase()} ${p}`))
      .sort();
    const routes = h.app.routeTable
      .filter((r) => r.url !== '/v1/openapi.json')
      .map((r) => `${r.method} ${r.url.replace(/:(\w+)/g, '{$1}')}`)
      .sort();
    expect(documented).toEqual(routes);
  });
});

describe('a request no route matches is 404 or 405, whatever its body', () => {
  const bodies: Array<[string, string | object, Record<string, string>]> = [
    ['a JSON body', { name: 'x', extra: true }, {}],
    ['a JSON array', '[1, 2]', {}],
    ['malformed JSON', '{"name":', {}],
    ['an unsupported media type', '<name>x</name>', { 'content-type': 'application/xml' }],
  ];

  for (const [what, body, headers] of bodies) {
    it(`an unknown route with ${what} is 404`, async () => {
      for (const path of ['/v1/no-such-route', '/api/v1/no-such-route/', '/nowhere']) {
        for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
          const res = await send(method, path, w.owner, body, headers);
          expect(res.status, `${method} ${path}`).toBe(404);
          expect(res.body).toEqual({ status: 404, message: `Route ${method} ${path} not found` });
        }
      }
    });

    it(`a known path with a wrong method and ${what} is 405 with Allow`, async () => {
      for (const path of ['/v1/workspaces', '/api/v1/workspaces/', '/api/v1/workspaces']) {
        for (const method of ['PUT', 'PATCH', 'DELETE']) {
          const res = await send(method, path, w.owner, body, headers);
          expect(res.status, `${method} ${path}`).toBe(405);
          expect(res.body).toEqual({ status: 405, message: `Method ${method} is not allowed on ${path}` });
          expect(res.headers.get('allow')!.split(/,\s*/).sort()).toEqual(['GET', 'POST']);
        }
      }
      const one = await send('POST', `/api/v1/workspaces/${w.org.slug}/`, w.owner, body, headers);
      expect(one.status).toBe(405);
      expect(one.headers.get('allow')!.split(/,\s*/).sort()).toEqual(['DELETE', 'GET', 'PATCH']);
    });
  }

  it('without credentials too: 404 and 405 say nothing more than the route table', async () => {
    expect((await send('POST', '/api/v1/no-such-route', null, { a: 1 })).status).toBe(404);
    expect((await send('DELETE', '/v1/workspaces/', null, { a: 1 })).status).toBe(405);
  });
});

describe('the rest of the server is unchanged', () => {
  const built = existsSync(join(DASHBOARD_DIST, 'index.html'));

  it.skipIf(!built)('the dashboard answers at / and on its page routes, with or without a trailing slash', async () => {
    for (const path of ['/', '/orgs/acme/projects', '/orgs/acme/projects/']) {
      const res = await send('GET', path, null, undefined, { accept: 'text/html' });
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-type')).toContain('text/html');
    }
  });

  it('/metrics and /docs answer', async () => {
    const metrics = await send('GET', '/metrics', null, undefined, { authorization: `Bearer ${METRICS_TOKEN}` });
    expect(metrics.status).toBe(200);
    expect(String(metrics.body)).toContain('slipway_http_requests_total');
    expect((await send('GET', '/metrics', null)).status).toBe(401);
    const docs = await send('GET', '/docs/');
    expect(docs.status).toBe(200);
    expect(String(docs.body)).toMatch(/swagger-ui/i);
  });
});
