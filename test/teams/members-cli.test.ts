/**
 * `slipway members`, `slipway invitations` and `slipway sessions` as a person runs them: the
 * executable as a child process against a listening server and real PostgreSQL.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { call } from '../control-plane/fixtures.js';
import { slipway, type CliResult } from '../cli/slipway.js';

let h: Harness;
let owner: TestUser;
let colleague: TestUser;
let home: string;
let env: Record<string, string>;
const ORG = 'cli-team';

const as = (user: TestUser, args: string[]) => slipway(args, { ...env, SLIPWAY_API_KEY: user.apiKey });
function expectOk(r: CliResult) {
  expect(r.code, `stdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(0);
  return r;
}
const json = (r: CliResult) => JSON.parse(expectOk(r).stdout);

beforeAll(async () => {
  h = await createHarness();
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  const address = h.app.server.address();
  if (!address || typeof address === 'string') throw new Error('no port');
  owner = await h.user();
  colleague = await h.user();
  home = mkdtempSync(join(tmpdir(), 'slipway-members-cli-'));
  env = { HOME: home, XDG_CONFIG_HOME: join(home, '.config'), SLIPWAY_SERVER: `http://127.0.0.1:${address.port}`, NO_COLOR: '1' };
  expect((await call(h, 'POST', '/v1/organizations', owner, { name: 'CLI Team', slug: ORG })).status).toBe(201);
});
afterAll(async () => {
  await h?.close();
  if (home) rmSync(home, { recursive: true, force: true });
});

describe('slipway members and invitations', () => {
  it('adds, lists, changes the role of and removes a member; refusals exit non-zero with the reason', async () => {
    expectOk(await as(owner, ['members', 'add', ORG, colleague.username, '--role', 'viewer']));
    const listed = expectOk(await as(owner, ['members', 'list', ORG]));
    expect(listed.stdout).toMatch(new RegExp(`${colleague.username}\\s+viewer`));
    expect(listed.stdout).toContain('LAST SIGN-IN');
    // A viewer sees the members, not when they signed in.
    expect(expectOk(await as(colleague, ['members', 'list', ORG])).stdout).not.toContain('LAST SIGN-IN');

    expectOk(await as(owner, ['members', 'role', ORG, colleague.email, 'deployer']));
    expect(json(await as(owner, ['orgs', 'get', ORG, '--json'])).members).toContainEqual(
      expect.objectContaining({ user_id: colleague.id, role: 'deployer' }),
    );
    const refused = await as(colleague, ['members', 'role', ORG, owner.username, 'viewer']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/is deployer; this request needs an admin or owner/);
    const badRole = await as(owner, ['members', 'role', ORG, colleague.username, 'superuser']);
    expect(badRole.code).not.toBe(0);
    expect(badRole.stderr).toContain('owner, admin, deployer, developer, viewer');
    const lastOwner = await as(owner, ['members', 'remove', ORG, owner.username]);
    expect(lastOwner.code).not.toBe(0);
    expect(lastOwner.stderr).toMatch(/last owner/);

    expectOk(await as(owner, ['members', 'remove', ORG, colleague.username]));
    expect(json(await as(owner, ['orgs', 'get', ORG, '--json'])).members.map((m: { user_id: string }) => m.user_id)).toEqual([owner.id]);
  });

  it('invites with a role (the link printed without SMTP), lists and revokes open invitations', async () => {
    const invited = expectOk(await as(owner, ['members', 'invite', ORG, 'newcomer@example.com', '--role', 'developer']));
    expect(invited.stdout).toMatch(/Invited newcomer@example\.com to cli-team as developer/);
    expect(invited.stdout).toMatch(/\/invitations\/inv_/);
    const open = json(await as(owner, ['invitations', 'list', ORG, '--json']));
    expect(open).toEqual([expect.objectContaining({ email: 'newcomer@example.com', role: 'developer' })]);
    expectOk(await as(owner, ['invitations', 'revoke', ORG, 'newcomer@example.com']));
    expect(expectOk(await as(owner, ['invitations', 'list', ORG])).stderr).toContain('no open invitations');
    const again = await as(owner, ['invitations', 'revoke', ORG, open[0].id]);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toMatch(/not found/i);
  });
});

describe('slipway sessions', () => {
  it('lists your sign-ins and ends one or all but the current one', async () => {
    const signIn = async (agent: string) => {
      const res = await h.app.inject({
        method: 'POST',
        url: '/v1/auth/login',
        headers: { 'user-agent': agent },
        payload: { email: colleague.email, password: colleague.password },
      });
      expect(res.statusCode).toBe(200);
      return String(res.headers['set-cookie']).split(';')[0]!;
    };
    const first = await signIn('Browser One');
    await signIn('Browser Two');
    await signIn('Browser Three');
    const table = expectOk(await as(colleague, ['sessions', 'list']));
    expect(table.stdout).toMatch(/password\s.*127\.0\.0\.1\s+Browser One/);
    const sessions = json(await as(colleague, ['sessions', 'list', '--json'])) as Array<{ id: string; user_agent: string }>;
    const one = sessions.find((s) => s.user_agent === 'Browser One')!;
    expect(expectOk(await as(colleague, ['sessions', 'revoke', one.id])).stdout).toContain(`Ended sign-in ${one.id}`);
    expect((await call(h, 'GET', '/v1/users/me/sessions', null, undefined, { cookie: first })).status).toBe(401);
    expect(expectOk(await as(colleague, ['sessions', 'revoke', '--all-others'])).stdout).toContain('Ended 2 sign-ins');
    expect(expectOk(await as(colleague, ['sessions', 'list'])).stderr).toContain('no open sign-ins');
    const usage = await as(colleague, ['sessions', 'revoke']);
    expect(usage.code).not.toBe(0);
    expect(usage.stderr).toContain('--all-others');
    // Another user's sign-ins are a site administrator's to see.
    const notAdmin = await as(colleague, ['sessions', 'list', '--user', owner.id]);
    expect(notAdmin.code).not.toBe(0);
    expect(notAdmin.stderr).toMatch(/site administrators/);
  });
});
