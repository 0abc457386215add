/**
 * Deleting an application (issue 30): its running pipeline job is cancelled, its instances
 * stop, the edge stops answering its host name, its records go (attachments of add-ons
 * cascade, the add-on stays), a stranger changes nothing, and the CLI deletes with --yes.
 * Real server, real runtime, real edge.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseProcfile } from '../../src/platform/builder/procfile.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { localRuntime } from '../helpers/local-runtime.js';
import { routerGet } from '../helpers/router-get.js';
import { publishedEvents } from '../helpers/published-events.js';
import { waitFor } from '../helpers/wait.js';
import { slipway } from '../cli/slipway.js';
import { NODE_APP, settled } from '../pipeline-deploy/fixtures.js';

let h: Harness;
let alice: TestUser;
let cliEnv: Record<string, string>;
const home = mkdtempSync(join(tmpdir(), 'slipway-app-delete-cli-'));

beforeAll(async () => {
  h = await createHarness(
    { ROUTER_HOST: '127.0.0.1', ROUTER_PORT: 0, RUNTIME_STOP_GRACE_MS: 1000, ROUTER_DRAIN_TIMEOUT_MS: 1000 },
    { jobs: true, runtime: true },
  );
  alice = await h.user();
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  const address = h.app.server.address() as { port: number };
  cliEnv = {
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    SLIPWAY_SERVER: `http://127.0.0.1:${address.port}`,
    SLIPWAY_API_KEY: alice.apiKey,
  };
});
afterAll(async () => {
  await h?.close();
  rmSync(home, { recursive: true, force: true });
});

const api = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown, user = alice) =>
  h.app.inject({ method, url, headers: user.headers, ...(payload === undefined ? {} : { payload: payload as object }) });

/** A web process that never answers: its deploy holds the application's pipeline job until cancelled. */
const HANGING_APP = `require('http').createServer(() => {}).listen(Number(process.env.PORT), '127.0.0.1');`;

/** Records a built image and release of `code` (as the build and release stages would); the release's id. */
async function release(app: { id: string; slug: string }, environmentId: string, version: number, code: string) {
  const dir = join(h.dataDir, 'images', app.id, String(version));
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'app.js'), code);
  const procfile = 'web: node app.js\n';
  writeFileSync(join(dir, 'Procfile'), procfile);
  const processes = JSON.stringify(parseProcfile(procfile));
  const imageId = uuidv7();
  await h.ctx.db
    .insertInto('images')
    .values({
      id: imageId,
      application_id: app.id,
      version,
      status: 'built',
      built: true,
      repository_name: app.slug,
      artifact_path: dir,
      procfile,
      processes,
      image_id: `sha256:${'0'.repeat(63)}${version}`,
    })
    .execute();
  const releaseId = uuidv7();
  await h.ctx.db
    .insertInto('releases')
    .values({
      id: releaseId,
      application_id: app.id,
      environment_id: environmentId,
      version,
      image_ref: imageId,
      status: 'built',
      built: true,
      configuration: JSON.stringify([]),
      configuration_sealed: h.ctx.secrets.seal(JSON.stringify({ values: {} })),
      processes,
      process_counts: JSON.stringify({ web: 1 }),
      health_check_path: '/',
      deployment_timeout: 120,
    })
    .execute();
  return releaseId;
}

async function deploy(releaseId: string): Promise<string> {
  const r = await api('POST', `/v1/releases/${releaseId}/deploy`);
  expect(r.statusCode, r.body).toBe(202);
  return r.json().deployment_id;
}

describe('deleting an application', () => {
  it('cancels its running deploy, stops and unroutes its instances, removes its records; a stranger changes nothing', async () => {
    const org = (await api('POST', '/v1/organizations', { name: `Gone ${uuidv7().slice(-6)}` })).json();
    const project = (await api('POST', '/v1/projects', { name: 'Shop', organization_id: org.id })).json();
    const app = (await api('POST', '/v1/applications', { name: 'Web', project_id: project.id })).json();
    const env = await h.ctx.db
      .selectFrom('environments')
      .select('id')
      .where('project_id', '=', project.id)
      .where('slug', '=', 'production')
      .executeTakeFirstOrThrow();
    // A subscription, so the organization's events are recorded (its address is never reached: the test checks the records).
    await h.ctx.db
      .insertInto('webhooks')
      .values({
        id: uuidv7(),
        organization_id: org.id,
        url: 'http://127.0.0.1:9/',
        events: ['application.deleted'],
        secret_sealed: h.ctx.secrets.seal('k'),
      })
      .execute();
    const host = `${app.slug}.${project.slug}.${org.slug}.localhost`;
    const routerPort = localRuntime(h.ctx).router.port;

    expect((await settled(h, alice, await deploy(await release(app, env.id, 1, NODE_APP('v1'))))).status).toBe('complete');
    expect((await routerGet(routerPort, host)).status).toBe(200);
    // A second deploy hangs in its health check: the delete must stop it too.
    const hanging = await deploy(await release(app, env.id, 2, HANGING_APP));
    await waitFor('the hanging deploy to start', async () =>
      (await api('GET', `/v1/deployments/${hanging}/detail`)).json().started ? true : null,
    );
    const pids = (await h.ctx.db.selectFrom('instances').select('pid').where('application_id', '=', app.id).execute())
      .map((r) => r.pid)
      .filter((pid): pid is number => pid !== null);
    expect(pids.length).toBeGreaterThanOrEqual(1);

    // An add-on's attachment goes with the application; the add-on itself stays (checked in SQL, add-ons need no runtime here).
    const cascades = await sql<{ delete_rule: string }>`
      SELECT rc.delete_rule FROM information_schema.referential_constraints rc
      JOIN information_schema.key_column_usage k ON k.constraint_name = rc.constraint_name
      WHERE k.table_name = 'addon_attachments' AND k.column_name = 'application_id'`.execute(h.ctx.db);
    expect(cascades.rows).toEqual([{ delete_rule: 'CASCADE' }]);

    // A stranger gets 403 and nothing changes.
    const stranger = await h.user();
    expect((await api('DELETE', `/v1/applications/${app.id}`, undefined, stranger)).statusCode).toBe(403);
    expect((await api('GET', `/v1/applications/${org.slug}/${project.slug}/${app.slug}`)).statusCode).toBe(200);
    expect((await routerGet(routerPort, host)).status).toBe(200);

    const deleted = await api('DELETE', `/v1/applications/${app.id}`);
    expect(deleted.statusCode, deleted.body).toBe(204);
    expect((await api('GET', `/v1/applications/${org.slug}/${project.slug}/${app.slug}`)).statusCode).toBe(404);
    expect((await api('GET', `/v1/deployments/${hanging}/detail`)).statusCode).toBe(404);
    expect((await api('DELETE', `/v1/applications/${app.id}`)).statusCode).toBe(404);
    // The edge no longer answers its host name with the app.
    expect((await routerGet(routerPort, host)).status).toBe(404);
    // Its processes are gone, and its artifacts with them.
    for (const pid of pids) expect(() => process.kill(pid, 0)).toThrow();
    expect(existsSync(join(h.dataDir, 'images', app.id))).toBe(false);
    const live = await h.ctx.db
      .selectFrom('pipeline_jobs')
      .select('id')
      .where('application_id', '=', app.id)
      .where('state', 'in', ['created', 'active'])
      .execute();
    expect(live).toEqual([]);
    await waitFor('the application.deleted event', async () =>
      (await publishedEvents(h.ctx.db, org.id, 'application.deleted')).some((e) => JSON.stringify(e.data).includes(app.id)),
    );
  });

  it('slipway apps delete refuses without a terminal or --yes, and deletes with --yes', async () => {
    const org = (await api('POST', '/v1/organizations', { name: `Cli ${uuidv7().slice(-6)}` })).json();
    const project = (await api('POST', '/v1/projects', { name: 'Shop', organization_id: org.id })).json();
    const app = (await api('POST', '/v1/applications', { name: 'Worker', project_id: project.id })).json();
    const path = `${org.slug}/${project.slug}/${app.slug}`;
    const refused = await slipway(['apps', 'delete', path], cliEnv);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/--yes/);
    expect((await api('GET', `/v1/applications/${path}`)).statusCode).toBe(200);
    const done = await slipway(['apps', 'delete', path, '--yes'], cliEnv);
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toMatch(/Deleted/);
    expect((await api('GET', `/v1/applications/${path}`)).statusCode).toBe(404);
  });
});
