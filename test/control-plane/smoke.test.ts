import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../helpers/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => {
  await h?.close();
});

describe('smoke', () => {
  it('creates an organization, project and application', async () => {
    const alice = await h.user();
    const org = await h.app.inject({ method: 'POST', url: '/v1/organizations', headers: alice.headers, payload: { name: 'Acme' } });
    expect(org.statusCode).toBe(201);
    const project = await h.app.inject({
      method: 'POST',
      url: '/v1/projects',
      headers: alice.headers,
      payload: { name: 'Web', organization_id: org.json().id },
    });
    expect(project.statusCode).toBe(201);
    const app = await h.app.inject({
      method: 'POST',
      url: '/v1/applications',
      headers: alice.headers,
      payload: { name: 'API', project_id: project.json().id },
    });
    expect(app.statusCode).toBe(201);
    expect(app.json()).toMatchObject({
      slug: 'api',
      project_slug: 'web',
      organization_slug: 'acme',
      platform: 'wind',
      deployment_timeout: 180,
    });
  });
});
