/**
 * Ancla's clients against a listening Slipway (real PostgreSQL): every call of the workspaces,
 * projects, environments and scoped-configuration families (calls/*.ts), sent as its client
 * sends it (`/api/v1`, trailing slashes, its body, `X-API-Key`) and decoded into the fields the
 * client reads. Then what the answers mean: counts, members, what a bulk import did.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { calls as configCalls } from './calls/config.js';
import { calls as environmentCalls } from './calls/environments.js';
import { calls as projectCalls } from './calls/projects.js';
import type { AnclaCall } from './calls/types.js';
import { calls as workspaceCalls } from './calls/workspaces.js';
import { sendCall } from './decoded-fields.js';

let h: Harness;
let base: string;
let alice: TestUser; // admin of acme
let carol: TestUser; // plain member of acme
const vars = { ws: 'acme', project: 'shop', env: 'staging' };

const v1 = async (user: TestUser, method: string, url: string, payload?: unknown) => {
  const response = await h.app.inject({
    method: method as 'GET',
    url: `/v1${url}`,
    headers: user.headers,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
  expect(response.statusCode, response.body).toBeLessThan(300);
  return response.json();
};

beforeAll(async () => {
  h = await createHarness();
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(h.app.server.address() as { port: number }).port}`;
  [alice, carol] = [await h.user(), await h.user()];
  await v1(alice, 'POST', '/workspaces', { name: 'Acme' });
  await v1(alice, 'POST', '/workspaces/acme/members', { username: carol.username });
  const project = await v1(alice, 'POST', '/workspaces/acme/projects', { name: 'Shop' });
  for (const name of ['web', 'worker']) await v1(alice, 'POST', '/applications', { name, project_id: project.id });
  await v1(alice, 'POST', '/workspaces/acme/projects/shop/envs', { name: 'staging' });
});
afterAll(async () => {
  await h?.close();
});

let made = 0;
/** What each client sends as the body of a call (read from the clients); none for a GET or DELETE. */
function bodyOf(call: AnclaCall): unknown {
  if (call.method === 'GET' || call.method === 'DELETE') return undefined;
  const name = `${call.client} made ${++made}`;
  if (call.client === 'go-cli' && call.method === 'POST' && call.path === '/api/v1/workspaces/') return { name, personal: false };
  if (call.client === 'go-cli' && call.method === 'POST' && call.path.endsWith('/projects/')) return { name, slug: `cli-made-${made}` };
  return { name };
}

/**
 * Sends each served call of a family in order, as `user`; answers each call's status and body.
 * A client's DELETE removes what that client made with its POST (`made` names the path's placeholder).
 */
async function sendAll(family: AnclaCall[], made?: 'ws' | 'project', user = alice) {
  const answers: Array<{ call: AnclaCall; status: number; body: unknown }> = [];
  const madeBy = new Map<string, string>();
  for (const call of family.filter((c) => c.test)) {
    const own = call.method === 'DELETE' && made ? { [made]: madeBy.get(call.client)! } : {};
    const answer = await sendCall(base, user.apiKey, call, { ...vars, ...own }, bodyOf(call));
    if (call.method === 'POST') madeBy.set(call.client, (answer.body as { slug: string }).slug);
    answers.push({ call, ...answer });
  }
  return answers;
}

describe('Ancla clients: workspaces, projects, environments, configuration', () => {
  it('workspaces', async () => {
    const answers = await sendAll(workspaceCalls, 'ws');
    for (const a of answers.filter((a) => a.call.method === 'POST')) expect(a.status).toBe(201);
    const acme = answers.find((a) => a.call.client === 'python-sdk' && a.call.method === 'GET' && a.call.path.endsWith('{ws}'))!.body as {
      service_count: number;
      project_count: number;
      members: Array<{ username: string; email: string; admin: boolean }>;
    };
    expect(acme).toMatchObject({ project_count: 1, service_count: 2 });
    expect(acme.members).toEqual([
      { user_id: alice.id, username: alice.username, email: alice.email, admin: true },
      { user_id: carol.id, username: carol.username, email: carol.email, admin: false },
    ]);
    for (const a of answers.filter((a) => a.call.method === 'DELETE')) expect(a.status).toBe(204);
    const left = (await v1(alice, 'GET', '/workspaces')) as Array<{ slug: string }>;
    expect(left.map((w) => w.slug).sort()).toEqual(['acme', expect.stringMatching(/^go-cli-made-/)]);
    const refused = await fetch(`${base}/api/v1/workspaces/acme`, { method: 'DELETE', headers: { 'X-API-Key': alice.apiKey } });
    expect(refused.status).toBe(409); // it has a project
    // Renamed by the SDKs' PATCH, the slug (and so every path) stays.
    expect(answers.filter((a) => a.call.method === 'PATCH').map((a) => (a.body as { slug: string }).slug)).toEqual([
      'acme',
      'acme',
      'acme',
    ]);
    // A plain member decodes too: the e-mails hidden from them read "" (Python's model requires a string).
    const seenByCarol = (
      await sendCall(
        base,
        carol.apiKey,
        workspaceCalls.find((c) => c.client === 'python-sdk' && c.path.endsWith('{ws}'))!,
        vars,
      )
    ).body as { members: Array<{ username: string; email: string }> };
    expect(seenByCarol.members.map((m) => m.email)).toEqual(['', carol.email]);
    // Renaming is for admins.
    const patch = await fetch(`${base}/api/v1/workspaces/acme`, {
      method: 'PATCH',
      headers: { 'X-API-Key': carol.apiKey, 'Content-Type': 'application/json' },
      body: '{"name":"Mine"}',
    });
    expect(patch.status).toBe(403);
  });

  it('projects', async () => {
    const answers = await sendAll(projectCalls, 'project');
    for (const a of answers.filter((a) => a.call.method === 'POST')) expect(a.status).toBe(201);
    const shop = answers.find((a) => a.call.client === 'ts-sdk' && a.call.method === 'GET' && a.call.path.endsWith('{project}'))!.body;
    expect(shop).toMatchObject({ slug: 'shop', workspace_slug: 'acme', service_count: 2, services: ['web', 'worker'] });
    const created = answers.find((a) => a.call.client === 'go-cli' && a.call.method === 'POST')!.body as {
      slug: string;
      environments: string[];
      service_count: number;
    };
    expect(created).toMatchObject({ slug: expect.stringMatching(/^cli-made-/), environments: ['production'], service_count: 0 });
    for (const a of answers.filter((a) => a.call.method === 'DELETE')) expect(a.status).toBe(204);
    // Shop and the CLI's; each SDK deleted the one it made. A project with services is kept (409).
    const list = (await v1(alice, 'GET', '/workspaces/acme/projects')) as Array<{ slug: string }>;
    expect(list.map((p) => p.slug)).toEqual([expect.stringMatching(/^cli-made-/), 'shop']);
    const refused = await fetch(`${base}/api/v1/workspaces/acme/projects/shop`, {
      method: 'DELETE',
      headers: { 'X-API-Key': alice.apiKey },
    });
    expect(refused.status).toBe(409);
    const byMember = await fetch(`${base}/api/v1/workspaces/acme/projects/${list[0]!.slug}`, {
      method: 'DELETE',
      headers: { 'X-API-Key': carol.apiKey },
    });
    expect(byMember.status).toBe(403);
  });

  it('environments', async () => {
    const answers = await sendAll(environmentCalls);
    for (const a of answers.filter((a) => a.call.method === 'POST')) expect(a.status).toBe(201);
    for (const a of answers.filter((a) => a.call.method === 'GET')) {
      const envs = (Array.isArray(a.body) ? a.body : [a.body]) as Array<{ service_count: number }>;
      expect(envs.map((e) => e.service_count)).toEqual(envs.map(() => 2));
    }
  });

  it('configuration', async () => {
    // A secret set beforehand at each scope: a bulk import never replaces it (skipped).
    const scopes = ['/workspaces/acme', '/workspaces/acme/projects/shop', '/workspaces/acme/projects/shop/envs/staging'];
    for (const scope of scopes) await v1(alice, 'POST', `${scope}/config`, { name: 'API_TOKEN', value: 'sealed', secret: true });
    for (const [i, scope] of scopes.entries()) {
      const [list, set, remove, bulk] = configCalls.slice(i * 4, i * 4 + 4) as [AnclaCall, AnclaCall, AnclaCall, AnclaCall];
      const created = await sendCall(base, alice.apiKey, set, vars, { name: 'GREETING', value: 'hello' });
      expect(created.status).toBe(201);
      const listed = (await sendCall(base, alice.apiKey, list, vars)).body as Array<{
        id: string;
        name: string;
        value: string;
        secret: boolean;
      }>;
      expect(listed.map((v) => [v.name, v.value, v.secret])).toEqual([
        ['API_TOKEN', '**secret**', true],
        ['GREETING', 'hello', false],
      ]);
      const imported = await sendCall(base, alice.apiKey, bulk, vars, {
        raw: '# the .env\nGREETING=hi\nexport PORT=8080\nAPI_TOKEN=leaked\nnot a line\n',
      });
      expect(imported.body).toEqual({
        created: ['PORT'],
        updated: ['GREETING'],
        skipped: ['API_TOKEN'],
        errors: [{ name: 'not', error: 'line 5: expected NAME=value', message: 'line 5: expected NAME=value' }],
      });
      const id = listed.find((v) => v.name === 'GREETING')!.id;
      await sendCall(base, alice.apiKey, remove, { ...vars, config_id: id });
      const after = (await v1(alice, 'GET', `${scope}/config`)) as Array<{ name: string; value: string }>;
      expect(after.map((v) => `${v.name}=${v.value}`)).toEqual(['API_TOKEN=**secret**', 'PORT=8080']);
    }
  });
});
