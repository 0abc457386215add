import { expect } from 'vitest';
import type { Harness, TestUser } from './harness.js';

export interface SeededApplication {
  org: { id: string; slug: string };
  project: { id: string; slug: string };
  app: { id: string; slug: string };
}

/** An organization, project and application owned by `owner`, created through the API. */
export async function seedApplication(
  h: Harness,
  owner: TestUser,
  names: { org: string; project: string; app: string },
): Promise<SeededApplication> {
  const post = async (url: string, payload: object) => {
    const res = await h.app.inject({ method: 'POST', url, headers: owner.headers, payload });
    expect(res.statusCode, res.body).toBe(201);
    return res.json();
  };
  const org = await post('/v1/organizations', { name: names.org });
  const project = await post('/v1/projects', { name: names.project, organization_id: org.id });
  const app = await post('/v1/applications', { name: names.app, project_id: project.id });
  return { org, project, app };
}
