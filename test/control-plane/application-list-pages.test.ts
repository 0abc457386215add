import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../helpers/harness.js';
import { call, seedWorld } from './fixtures.js';

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => {
  await h?.close();
});

describe("a project's application list in pages", () => {
  it('answers an array by slug, page by page, with a Link to the next page while more follow', async () => {
    const w = await seedWorld(h); // one application: "api"
    for (const name of ['Billing', 'Cron', 'Web', 'Zeta']) {
      expect((await call(h, 'POST', '/v1/applications', w.owner, { name, project_id: w.project.id })).status).toBe(201);
    }
    const base = `/v1/applications/${w.org.slug}/${w.project.slug}`;
    const all = await h.app.inject({ method: 'GET', url: base, headers: w.owner.headers });
    expect(all.json().map((a: { slug: string }) => a.slug)).toEqual(['api', 'billing', 'cron', 'web', 'zeta']);
    expect(all.headers.link).toBeUndefined();

    const seen: string[] = [];
    let next: string | undefined = `${base}?per_page=2`;
    while (next) {
      const page: { statusCode: number; json(): any; headers: Record<string, unknown> } = await h.app.inject({
        method: 'GET',
        url: next,
        headers: w.owner.headers,
      });
      expect(page.statusCode).toBe(200);
      seen.push(...page.json().map((a: { slug: string }) => a.slug));
      next = /<([^>]+)>; rel="next"/.exec(String(page.headers.link ?? ''))?.[1];
    }
    expect(seen).toEqual(['api', 'billing', 'cron', 'web', 'zeta']);

    const past = await h.app.inject({ method: 'GET', url: `${base}?page=9&per_page=2`, headers: w.owner.headers });
    expect(past.json()).toEqual([]);
    const tooBig = await h.app.inject({ method: 'GET', url: `${base}?per_page=101`, headers: w.owner.headers });
    expect(tooBig.statusCode).toBe(422);
  });
});
