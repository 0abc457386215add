/**
 * An environment deploy's stream: every service's build, release and deployment log lines,
 * each once, prefixed with the service, then `end`; a client resuming from a per-section
 * cursor misses nothing even though the services' logs grow at the same time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestRepo } from '../helpers/git-repo.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { pythonHttpApp } from '../helpers/python-app.js';
import { openSse } from '../helpers/sse-client.js';

const SECRET = 'pg-pass-stream-9f2c1a';
const P = '/workspaces/acme/projects/shop';

let h: Harness;
let alice: TestUser;
let repo: TestRepo;
let base: string;

const call = (method: string, url: string, payload?: unknown) =>
  h.app.inject({
    method: method as 'GET',
    url: `/v1${url}`,
    headers: alice.headers,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });

beforeAll(async () => {
  h = await createHarness(
    { ROUTER_HOST: '127.0.0.1', ROUTER_PORT: 0, RUNTIME_STOP_GRACE_MS: 2000, ROUTER_DRAIN_TIMEOUT_MS: 2000, PIPELINE_CONCURRENCY: 4 },
    { jobs: true, runtime: true },
  );
  alice = await h.user();
  base = await h.app.listen({ host: '127.0.0.1', port: 0 });
  repo = new TestRepo('slipway-stream-env-repo-');
  repo.commit(
    {
      'server.py': pythonHttpApp(`f"{os.environ.get('SERVICE')}"`),
      Procfile: 'web: python3 server.py\nrelease: echo "release with $DB_PASSWORD"\n',
    },
    'app',
  );
  const ws = (await call('POST', '/workspaces', { name: 'Acme' })).json();
  const project = (await call('POST', '/projects', { name: 'Shop', organization_id: ws.id })).json();
  for (const name of ['api', 'web']) {
    const app = (await call('POST', '/applications', { name, project_id: project.id })).json();
    await call('PATCH', `/applications/${app.id}/settings`, { github_repository: repo.dir, deployment_timeout: 60 });
    await call('POST', `/configurations/${app.id}`, { name: 'SERVICE', value: name });
  }
  expect((await call('POST', `${P}/envs`, { name: 'staging' })).statusCode).toBe(201);
  await call('POST', `${P}/envs/staging/config`, { name: 'DB_PASSWORD', value: SECRET, secret: true });
}, 120_000);

afterAll(async () => {
  await h?.close();
  repo?.remove();
});

describe('environment deploy log stream', () => {
  it("streams every service's logs once and ends with the deploy's status; resumes from its cursor", async () => {
    const started = (await call('POST', `${P}/envs/staging/deploy`)).json();
    const url = `${base}/v1${P}/envs/staging/deploys/${started.id}/log/stream`;
    const whole = await openSse(url, alice.headers);
    const dropping = await openSse(url, alice.headers);
    await dropping.until((e) => e.event === 'line' && e.data.line.startsWith('web |'), 'a line of the second service');
    dropping.close();
    const cursor = dropping.events.filter((e) => e.event === 'line').at(-1)!.id!;
    expect(cursor.split('.')).toHaveLength(6); // build, release, deployment of two services
    const resumed = await openSse(url, { ...alice.headers, 'last-event-id': cursor });

    const end = await whole.until((e) => e.event === 'end', 'the end event');
    await Promise.all([whole.ended, resumed.ended]);
    expect(end.data).toMatchObject({ status: 'complete' });
    const lines = whole.events.filter((e) => e.event === 'line').map((e) => e.data.line as string);
    // Each section's lines, in order, exactly as the merged log shows them (headers aside).
    const logText: string = (await call('GET', `${P}/envs/staging/deploys/${started.id}/log`)).json().log_text;
    const merged = logText
      .split('\n')
      .filter((l) => l && !/^\w+ \| (===== |----- (build|release) v\S+$|----- deployment$)/.test(l))
      .map((l) => l.replace(/^(\w+ \| )\S+Z /, '$1'));
    expect([...lines].sort()).toEqual([...merged].sort());
    for (const service of ['api', 'web']) {
      expect(lines.filter((l) => l.startsWith(`${service} |`))).toEqual(merged.filter((l) => l.startsWith(`${service} |`)));
    }
    expect(lines.some((l) => l.includes('release with **secret**'))).toBe(true);
    expect(lines.join('\n')).not.toContain(SECRET);
    const before = dropping.events.filter((e) => e.event === 'line').map((e) => e.data.line as string);
    const after = resumed.events.filter((e) => e.event === 'line').map((e) => e.data.line as string);
    expect([...before, ...after].sort()).toEqual([...lines].sort());
  }, 120_000);
});
