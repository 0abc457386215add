import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { Harness, TestUser } from '../helpers/harness.js';
import { seedApplication } from '../helpers/seed.js';

export interface Repo {
  owner: TestUser;
  orgSlug: string;
  /** `org/project/app`: the application's registry repository name. */
  name: string;
}

/** An organization, project and application owned by `owner` (a fresh user by default). */
export async function seedRepository(h: Harness, owner?: TestUser): Promise<Repo> {
  owner ??= await h.user();
  const { org, project, app } = await seedApplication(h, owner, {
    org: `Reg ${randomBytes(3).toString('hex')}`,
    project: 'Web',
    app: 'Api',
  });
  return { owner, orgSlug: org.slug, name: `${org.slug}/${project.slug}/${app.slug}` };
}

export async function addMember(h: Harness, repo: Repo, user: TestUser) {
  const res = await h.app.inject({
    method: 'POST',
    url: `/v1/organizations/${repo.orgSlug}/members`,
    headers: repo.owner.headers,
    payload: { username: user.username },
  });
  expect(res.statusCode, res.body).toBe(200);
}

export const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

/** The JWT's header and claims, unverified (for inspection only). */
export function decodeJwt(token: string): { header: any; claims: any } {
  const [h, c] = token.split('.');
  return { header: JSON.parse(Buffer.from(h!, 'base64url').toString()), claims: JSON.parse(Buffer.from(c!, 'base64url').toString()) };
}
