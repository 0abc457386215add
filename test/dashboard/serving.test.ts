// HTTP-level proof that Slipway serves the built dashboard next to the API (the browser-driven
// end-to-end tests are in browser.test.ts).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DASHBOARD_CSP, DASHBOARD_DIST } from '../../src/dashboard/serve.js';
import { createHarness, type Harness } from '../helpers/harness.js';

const built = existsSync(join(DASHBOARD_DIST, 'index.html'));
let h: Harness;

beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => {
  await h?.close();
});

describe.skipIf(!built)('dashboard serving (needs `npm run build:dashboard`)', () => {
  it('serves index.html at / with a strict CSP and no inline script or style', async () => {
    const res = await h.app.inject({ method: 'GET', url: '/', headers: { accept: 'text/html' } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-security-policy']).toBe(DASHBOARD_CSP);
    expect(res.body).not.toMatch(/<script>(?!<)|<style|style=/);
  });

  it('serves fingerprinted assets as immutable', async () => {
    const index = await h.app.inject({ method: 'GET', url: '/' });
    const script = /src="(\/assets\/index-[\w-]+\.js)"/.exec(index.body)?.[1];
    expect(script).toBeDefined();
    const res = await h.app.inject({ method: 'GET', url: script! });
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toContain('immutable');
  });

  it("sends the script precompressed, under 200 KB compressed (the issue's budget for initial JavaScript)", async () => {
    const index = await h.app.inject({ method: 'GET', url: '/' });
    const script = /src="(\/assets\/index-[\w-]+\.js)"/.exec(index.body)![1]!;
    const plain = await h.app.inject({ method: 'GET', url: script });
    for (const encoding of ['br', 'gzip']) {
      const res = await h.app.inject({ method: 'GET', url: script, headers: { 'accept-encoding': encoding } });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-encoding']).toBe(encoding);
      expect(res.rawPayload.length).toBeLessThan(200 * 1024);
      expect(res.rawPayload.length).toBeLessThan(plain.rawPayload.length / 2);
    }
  });

  it('falls back to index.html for page routes but leaves /v1 and unknown non-page requests to the API', async () => {
    const page = await h.app.inject({ method: 'GET', url: '/orgs/acme/projects', headers: { accept: 'text/html' } });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');
    const api = await h.app.inject({ method: 'GET', url: '/v1/nope', headers: { accept: 'text/html' } });
    expect(api.statusCode).toBe(404);
    expect(api.json()).toMatchObject({ status: 404 });
    const json = await h.app.inject({ method: 'GET', url: '/orgs/acme' });
    expect(json.statusCode).toBe(404);
    const missingAsset = await h.app.inject({ method: 'GET', url: '/assets/missing.js', headers: { accept: 'text/html' } });
    expect(missingAsset.statusCode).toBe(404);
    const session = await h.app.inject({ method: 'GET', url: '/v1/auth/session', headers: { accept: 'text/html' } });
    expect(session.json()).toEqual({ authenticated: false, user: null });
  });
});

describe('dashboard without a build', () => {
  it('answers page requests with a clear 503 naming the build command', async () => {
    const { default: Fastify } = await import('fastify');
    const { mkdtempSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { registerDashboard } = await import('../../src/dashboard/serve.js');
    const app = Fastify();
    await registerDashboard(app, mkdtempSync(join(tmpdir(), 'no-dashboard-')));
    const res = await app.inject({ method: 'GET', url: '/', headers: { accept: 'text/html' } });
    expect(res.statusCode).toBe(503);
    expect(res.body).toContain('npm run build');
    await app.close();
  });
});
