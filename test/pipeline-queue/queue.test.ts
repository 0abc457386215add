/**
 * The pipeline queue as a member sees it (issue 30): deploys of different applications of one
 * organization run side by side while one is slow, a queued deploy says what it waits for,
 * a deployment can be cancelled (queued: it leaves the queue; running: the previous release
 * keeps serving, through the edge), and a rollback needs no body. Real server, real runtime.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseProcfile } from '../../src/platform/builder/procfile.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { localRuntime } from '../helpers/local-runtime.js';
import { routerGet } from '../helpers/router-get.js';
import { waitFor } from '../helpers/wait.js';
import { slipway } from '../cli/slipway.js';
import { TestRepo } from '../helpers/git-repo.js';
import { NODE_APP, settled } from '../pipeline-deploy/fixtures.js';

let h: Harness;
let alice: TestUser;
let cliEnv: Record<string, string>;
const home = mkdtempSync(join(tmpdir(), 'slipway-queue-cli-'));

beforeAll(async () => {
  h = await createHarness(
    {
      ROUTER_HOST: '127.0.0.1',
      ROUTER_PORT: 0,
      RUNTIME_RESTART_BACKOFF_MS: 50,
      RUNTIME_STOP_GRACE_MS: 1000,
      ROUTER_DRAIN_TIMEOUT_MS: 1000,
      PIPELINE_CONCURRENCY: 4,
      PIPELINE_ORG_CONCURRENCY: 2,
    },
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

const routerPort = () => localRuntime(h.ctx).router.port;
const api = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: unknown, user = alice) =>
  h.app.inject({ method, url, headers: user.headers, ...(payload === undefined ? {} : { payload: payload as object }) });

/** An application that never answers its health check (a slow or failing deploy holds its job until the timeout). */
const HANGING_APP = `require('http').createServer(() => {}).listen(Number(process.env.PORT), '127.0.0.1');`;

interface Project {
  orgId: string;
  orgSlug: string;
  projectId: string;
  projectSlug: string;
}

async function project(): Promise<Project> {
  const org = (await api('POST', '/v1/organizations', { name: `Queue ${uuidv7().slice(-6)}` })).json();
  const project = (await api('POST', '/v1/projects', { name: 'Shop', organization_id: org.id })).json();
  return { orgId: org.id, orgSlug: org.slug, projectId: project.id, projectSlug: project.slug };
}

interface QueueApp {
  id: string;
  path: string;
  host: string;
  /** Records a built image and release of this code (as the build and release stages would); its id. */
  release(code: string, timeoutSeconds?: number): Promise<string>;
}

async function application(p: Project, name: string, settings: Record<string, unknown> = {}): Promise<QueueApp> {
  const created = await api('POST', '/v1/applications', { name, project_id: p.projectId });
  expect(created.statusCode, created.body).toBe(201);
  const app = created.json();
  const patch = await api('PATCH', `/v1/applications/${app.id}/settings`, { health_check_path: '/', ...settings });
  expect(patch.statusCode, patch.body).toBe(200);
  const env = await h.ctx.db
    .selectFrom('environments')
    .select('id')
    .where('project_id', '=', p.projectId)
    .where('slug', '=', 'production')
    .executeTakeFirstOrThrow();
  let version = 0;
  return {
    id: app.id,
    path: `${p.orgSlug}/${p.projectSlug}/${app.slug}`,
    host: `${app.slug}.${p.projectSlug}.${p.orgSlug}.localhost`,
    async release(code, timeoutSeconds = 30) {
      version++;
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
          repository_name: `${p.orgSlug}/${p.projectSlug}/${app.slug}`,
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
          environment_id: env.id,
          version,
          image_ref: imageId,
          status: 'built',
          built: true,
          configuration: JSON.stringify([{ name: 'GREETING', value: 'hello', secret: false }]),
          configuration_sealed: h.ctx.secrets.seal(JSON.stringify({ values: { GREETING: 'hello' } })),
          processes,
          process_counts: JSON.stringify({ web: 1 }),
          health_check_path: '/',
          deployment_timeout: timeoutSeconds,
        })
        .execute();
      return releaseId;
    },
  };
}

async function deploy(releaseId: string): Promise<string> {
  const r = await api('POST', `/v1/releases/${releaseId}/deploy`);
  expect(r.statusCode, r.body).toBe(202);
  return r.json().deployment_id;
}

const detail = async (id: string) => (await api('GET', `/v1/deployments/${id}/detail`)).json();
const deploying = (id: string) => waitFor(`deployment ${id} running`, async () => ((await detail(id)).started ? true : null));

describe('the pipeline queue', () => {
  it('deploys other applications while one hangs, says why a deploy waits, and cancels queued and running deploys', async () => {
    const p = await project();
    const stuck = await application(p, 'Stuck');
    const web = await application(p, 'Web');
    const api2 = await application(p, 'Api');

    // Web serves v1 (to check the previous release keeps serving after a cancel).
    const webV1 = await deploy(await web.release(NODE_APP('v1')));
    expect((await settled(h, alice, webV1)).status).toBe('complete');

    // A deploy that hangs until its timeout holds one of the organization's two slots...
    const hanging = await deploy(await stuck.release(HANGING_APP, 120));
    await deploying(hanging);
    // ...and a deploy of another application still goes through beside it.
    const apiV1 = await deploy(await api2.release(NODE_APP('api')));
    expect((await settled(h, alice, apiV1)).status).toBe('complete');
    expect((await detail(hanging)).status).toBe('deploying');

    // The same application's next deploy waits behind its running one, and says so.
    const behind = await deploy(await stuck.release(NODE_APP('fixed')));
    const queued = await detail(behind);
    expect(queued.status).toBe('deploying');
    expect(queued.started).toBeNull();
    expect(queued.queue_reason).toBe(`waiting for deployment ${hanging} of app stuck`);
    // A build of it (what `deploy --wait` follows first) says the same in its log.
    const repo = new TestRepo();
    repo.commit({ 'app.js': NODE_APP('built'), Procfile: 'web: node app.js\n' });
    expect((await api('PATCH', `/v1/applications/${stuck.id}/settings`, { github_repository: repo.dir })).statusCode).toBe(200);
    const build = await api('POST', `/v1/images/${stuck.id}/build`);
    expect(build.statusCode, build.body).toBe(202);
    const buildLog = (await api('GET', `/v1/images/${build.json().image_id}/log`)).json();
    expect(buildLog).toMatchObject({ status: 'building', queue_reason: `waiting for deployment ${hanging} of app stuck` });
    repo.remove();

    // Web's v2 hangs too: with two running the organization is at its limit, and Api's next waits for a slot.
    const webHanging = await deploy(await web.release(HANGING_APP, 120));
    await deploying(webHanging);
    const atLimit = await deploy(await api2.release(NODE_APP('api2')));
    expect((await detail(atLimit)).queue_reason).toMatch(/^organization limit 2 reached/);
    const listed = (await api('GET', `/v1/applications/${api2.id}/deployments`)).json();
    expect(listed.items[0]).toMatchObject({ id: atLimit, queue_reason: expect.stringMatching(/^organization limit 2 reached/) });
    const shown = await slipway(['deployments', 'get', atLimit], cliEnv);
    expect(shown.stdout).toMatch(/organization limit 2 reached/);

    // Cancel the queued one (CLI): it leaves the queue and never runs.
    const cancelQueued = await slipway(['deployments', 'cancel', behind], cliEnv);
    expect(cancelQueued.code, cancelQueued.stderr).toBe(0);
    expect(cancelQueued.stdout).toContain(`Cancelled deployment ${behind}`);
    expect(await detail(behind)).toMatchObject({ status: 'error', error_code: 'cancelled', started: null, queue_reason: null });

    // Cancel Web's running rollout (API): its new instance stops, v1 keeps serving through the edge.
    const cancelRunning = await api('POST', `/v1/deployments/${webHanging}/cancel`);
    expect(cancelRunning.statusCode, cancelRunning.body).toBe(202);
    const cancelled = await settled(h, alice, webHanging);
    expect(cancelled).toMatchObject({ status: 'error', error_code: 'cancelled' });
    expect(cancelled.error_detail).toMatch(/^Cancelled by .*; the previous release keeps serving$/);
    expect(await routerGet(routerPort(), web.host)).toEqual({ status: 200, body: 'v1:hello' });
    const instances = await h.ctx.db.selectFrom('instances').select('deployment_id').where('application_id', '=', web.id).execute();
    expect(instances.map((i) => i.deployment_id)).toEqual([webV1]);

    // The freed slot runs Api's waiting deploy.
    expect((await settled(h, alice, atLimit)).status).toBe('complete');

    // A finished deployment cannot be cancelled; a stranger cannot cancel anything.
    const again = await slipway(['deploy', 'cancel', webV1], cliEnv);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain(`Deployment ${webV1} already finished (complete): there is nothing to cancel`);
    const stranger = await h.user();
    expect((await api('POST', `/v1/deployments/${hanging}/cancel`, undefined, stranger)).statusCode).toBe(403);
    // The cancel is in the audit log.
    const audited = await h.ctx.db
      .selectFrom('audit_log')
      .select(['action', 'resource_id'])
      .where('denied', '=', false)
      .where('resource_id', 'in', [behind, webHanging])
      .execute();
    expect(audited.map((a) => a.resource_id).sort()).toEqual([behind, webHanging].sort());

    // Clean up the hanging deploy so the file ends quickly.
    expect((await api('POST', `/v1/deployments/${hanging}/cancel`)).statusCode).toBe(202);
    expect((await settled(h, alice, hanging)).error_code).toBe('cancelled');
  }, 120_000);

  it('rolls back with no body or an empty one, and answers a stranger 403 before any body error', async () => {
    const p = await project();
    const web = await application(p, 'Web');
    expect((await settled(h, alice, await deploy(await web.release(NODE_APP('v1'))))).status).toBe('complete');
    expect((await settled(h, alice, await deploy(await web.release(NODE_APP('v2'))))).status).toBe('complete');

    const stranger = await h.user();
    const strangerBad = await api('POST', `/v1/applications/${web.id}/rollback`, { nonsense: 1 }, stranger);
    expect(strangerBad.statusCode).toBe(403);
    const strangerNone = await h.app.inject({ method: 'POST', url: `/v1/applications/${web.id}/rollback`, headers: stranger.headers });
    expect(strangerNone.statusCode).toBe(403);
    // A member still gets the body's error.
    expect((await api('POST', `/v1/applications/${web.id}/rollback`, { nonsense: 1 })).statusCode).toBe(422);

    const noBody = await h.app.inject({ method: 'POST', url: `/v1/applications/${web.id}/rollback`, headers: alice.headers });
    expect(noBody.statusCode, noBody.body).toBe(202);
    expect(noBody.json()).toMatchObject({ is_rollback: true, release: { version: 1 } });
    expect((await settled(h, alice, noBody.json().id)).status).toBe('complete');
    expect(await routerGet(routerPort(), web.host)).toEqual({ status: 200, body: 'v1:hello' });

    const empty = await h.app.inject({
      method: 'POST',
      url: `/v1/applications/${web.id}/rollback`,
      headers: { ...alice.headers, 'content-type': 'application/json' },
      payload: '',
    });
    // An empty body is no body too: the default target (nothing served before v1 now).
    expect(empty.statusCode, empty.body).toBe(409);
    expect(empty.json().message).toBe('No earlier release served before v1: there is nothing to roll back to');

    // A configuration change after the rollback goes live on the image rolled back to, not the newer one.
    expect((await api('POST', `/v1/configurations/${web.id}`, { name: 'GREETING', value: 'again' })).statusCode).toBe(201);
    const configured = await api('POST', `/v1/applications/${web.id}/config-release`);
    expect(configured.statusCode, configured.body).toBe(202);
    expect((await settled(h, alice, configured.json().deployment_id)).status).toBe('complete');
    expect(await routerGet(routerPort(), web.host)).toEqual({ status: 200, body: 'v1:again' });
  }, 90_000);

  it('puts a runtime configuration change live on the built image with no build, and refuses a build-time one', async () => {
    const p = await project();
    const web = await application(p, 'Web');
    expect((await settled(h, alice, await deploy(await web.release(NODE_APP('v1'))))).status).toBe('complete');
    const imagesBefore = await h.ctx.db.selectFrom('images').select('id').where('application_id', '=', web.id).execute();

    const set = await slipway(['config', 'set', 'GREETING=bonjour', '--app', web.path], cliEnv);
    expect(set.code, set.stderr).toBe(0);
    const released = await slipway(['config', 'release', '--wait', '--app', web.path, '--json'], cliEnv);
    expect(released.code, released.stderr).toBe(0);
    const result = JSON.parse(released.stdout);
    expect(result).toMatchObject({ version: 2, image_id: imagesBefore[0]!.id });
    expect(await routerGet(routerPort(), web.host)).toEqual({ status: 200, body: 'v1:bonjour' });
    // No build: the same image, and no new image record.
    const imagesAfter = await h.ctx.db.selectFrom('images').select('id').where('application_id', '=', web.id).execute();
    expect(imagesAfter).toEqual(imagesBefore);
    const release = (await api('GET', `/v1/releases/${result.release_id}/detail`)).json();
    expect(release).toMatchObject({ image: { id: imagesBefore[0]!.id }, configuration_changes: { changed: ['GREETING'] } });

    // A build-time variable needs a build.
    expect((await slipway(['config', 'set', 'NPM_FLAGS=--omit=dev', '--buildtime', '--app', web.path], cliEnv)).code).toBe(0);
    const refused = await api('POST', `/v1/applications/${web.id}/config-release`);
    expect(refused.statusCode).toBe(409);
    expect(refused.json().message).toBe(
      'Build-time variable NPM_FLAGS changed since image v1 was built: deploy with a build (`slipway deploy`) instead',
    );
    const stranger = await h.user();
    expect((await api('POST', `/v1/applications/${web.id}/config-release`, undefined, stranger)).statusCode).toBe(403);
  }, 60_000);
});
