import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { v7 as uuidv7 } from 'uuid';
import { ReleasesRepository } from '../../src/pipeline/release/releases.repository.js';
import { sweepDeletedEnvironments } from '../../src/modules/environments/retirement.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { deployableApp, NODE_APP, settled, type Deployable } from './fixtures.js';

/**
 * Issue 19: the application's lists and latest records cover every environment (or the one
 * `?environment=` names), and release versions count up once per application.
 */
let h: Harness;
let alice: TestUser;
let app: Deployable;
let stagingId: string;

const get = (url: string, user = alice) => h.app.inject({ method: 'GET', url: `/v1${url}`, headers: user.headers });

beforeAll(async () => {
  h = await createHarness(
    { ROUTER_HOST: '127.0.0.1', ROUTER_PORT: 0, RUNTIME_STOP_GRACE_MS: 1000, PIPELINE_CONCURRENCY: 4 },
    { jobs: true, runtime: true },
  );
  alice = await h.user();
  app = await deployableApp(h, alice, { health_check_path: '/' });
  const env = await h.app.inject({
    method: 'POST',
    url: `/v1/workspaces/${app.slugs.org}/projects/${app.slugs.project}/envs`,
    headers: alice.headers,
    payload: { name: 'staging' },
  });
  expect(env.statusCode).toBe(201);
  stagingId = env.json().id;
});
afterAll(async () => {
  await h?.close();
});

describe('every environment in the lists', () => {
  it('lists a production and a staging deployment, newest first, each naming its environment, filtered by ?environment=', async () => {
    const prodRelease = await app.release({ 'app.js': NODE_APP('v1') }, 'web: node app.js\n');
    const prodDeploy = await h.app.inject({ method: 'POST', url: `/v1/releases/${prodRelease}/deploy`, headers: alice.headers });
    expect(prodDeploy.statusCode).toBe(202);
    await settled(h, alice, prodDeploy.json().deployment_id);

    // A staging release of the same image (as a promotion records it): the next version of the application.
    const repo = new ReleasesRepository(h.ctx.db);
    const staging = await repo.insertNext(app.appId, stagingId, 'wind');
    expect(staging.version).toBe(2);
    const prodRow = (await repo.findById(prodRelease))!;
    await repo.update(staging.id, {
      status: 'built',
      built: true,
      image_ref: prodRow.image_ref,
      configuration: JSON.stringify([]),
      configuration_sealed: prodRow.configuration_sealed,
      processes: JSON.stringify(prodRow.processes),
      process_counts: JSON.stringify(prodRow.process_counts),
      health_check_path: '/',
    });
    const stagingDeploy = await h.app.inject({ method: 'POST', url: `/v1/releases/${staging.id}/deploy`, headers: alice.headers });
    expect(stagingDeploy.statusCode).toBe(202);
    await settled(h, alice, stagingDeploy.json().deployment_id);

    const all = (await get(`/applications/${app.appId}/deployments`)).json();
    expect(all.pagination).toMatchObject({ total: 2, pages: 1 });
    expect(all.items.map((d: { environment: string; release: { version: number } }) => [d.environment, d.release.version])).toEqual([
      ['staging', 2],
      ['production', 1],
    ]);
    expect(all.items[0].environment_id).toBe(stagingId);

    const onlyProd = (await get(`/applications/${app.appId}/deployments?environment=production`)).json();
    expect(onlyProd.pagination.total).toBe(1);
    expect(onlyProd.items[0]).toMatchObject({ environment: 'production', release: { id: prodRelease } });
    const onlyStaging = (await get(`/applications/${app.appId}/deployments?environment=staging`)).json();
    expect(onlyStaging.items.map((d: { id: string }) => d.id)).toEqual([stagingDeploy.json().deployment_id]);

    // Pagination counts what the filter keeps.
    const page2 = (await get(`/applications/${app.appId}/deployments?per_page=1&page=2`)).json();
    expect(page2.pagination).toEqual({ page: 2, per_page: 1, total: 2, pages: 2 });
    expect(page2.items.map((d: { environment: string }) => d.environment)).toEqual(['production']);

    const releases = (await get(`/releases/${app.appId}`)).json();
    expect(releases.items.map((r: { version: number; environment: string }) => [r.version, r.environment])).toEqual([
      [2, 'staging'],
      [1, 'production'],
    ]);
    const stagingReleases = (await get(`/releases/${app.appId}?environment=staging&per_page=1`)).json();
    expect(stagingReleases).toMatchObject({
      items: [{ id: staging.id, environment: 'staging', environment_id: stagingId }],
      pagination: { total: 1, pages: 1 },
    });

    // Latest records: the newest of any environment by default, or of the one named.
    const detailUrl = `/applications/${app.slugs.org}/${app.slugs.project}/${app.slugs.app}`;
    const detail = (await get(detailUrl)).json();
    expect(detail.latest_release).toMatchObject({ version: 2, environment: 'staging' });
    expect(detail.latest_deployment).toMatchObject({ release_version: 2, environment: 'staging' });
    const prodDetail = (await get(`${detailUrl}?environment=production`)).json();
    expect(prodDetail.latest_release).toMatchObject({ version: 1, environment: 'production' });
    expect(prodDetail.latest_deployment).toMatchObject({ release_version: 1, environment: 'production' });

    const status = (await get(`/applications/${app.appId}/pipeline-status`)).json();
    expect(status.release).toMatchObject({ version: 2, environment: 'staging' });
    expect(status.deploy).toMatchObject({ version: 2, environment: 'staging' });
    const prodStatus = (await get(`/applications/${app.appId}/pipeline-status?environment=production`)).json();
    expect(prodStatus.release).toMatchObject({ version: 1, environment: 'production' });
    expect(prodStatus.deploy).toMatchObject({ version: 1, environment: 'production' });
  });

  it('answers 404 for an environment the project does not have, 422 for a malformed one, and 403 to outsiders', async () => {
    for (const url of [
      `/applications/${app.appId}/deployments?environment=qa`,
      `/releases/${app.appId}?environment=qa`,
      `/applications/${app.appId}/pipeline-status?environment=qa`,
      `/applications/${app.slugs.org}/${app.slugs.project}/${app.slugs.app}?environment=qa`,
    ]) {
      const res = await get(url);
      expect(res.statusCode, url).toBe(404);
      expect(res.json().message).toContain("Environment 'qa'");
    }
    const bad = await get(`/releases/${app.appId}?environment=Not%20A%20Slug`);
    expect(bad.statusCode).toBe(422);
    const mallory = await h.user();
    expect((await get(`/releases/${app.appId}?environment=staging`, mallory)).statusCode).toBe(403);
  });
});

describe('one release numbering per application', () => {
  it('gives 8 concurrent releases across two environments 8 distinct consecutive versions', async () => {
    const before = (await get(`/releases/${app.appId}`)).json().pagination.total as number;
    const repo = new ReleasesRepository(h.ctx.db);
    const created = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        i % 2 === 0
          ? // Half through the API (production), half as an environment deploy or promotion records them (staging).
            h.app.inject({ method: 'POST', url: `/v1/releases/${app.appId}/create`, headers: alice.headers }).then((r) => {
              expect(r.statusCode).toBe(202);
              return r.json().version as number;
            })
          : repo.insertNext(app.appId, stagingId, 'wind').then((r) => r.version),
      ),
    );
    expect([...created].sort((a, b) => a - b)).toEqual(Array.from({ length: 8 }, (_, i) => before + 1 + i));

    const list = (await get(`/releases/${app.appId}?per_page=100`)).json();
    const versions = list.items.map((r: { version: number }) => r.version);
    expect(versions).toEqual([...versions].sort((a, b) => b - a));
    expect(new Set(versions).size).toBe(versions.length);
    expect(list.items.filter((r: { environment: string }) => r.environment === 'staging')).toHaveLength(5);
  });

  it('numbers a release above versions stored without the counter (imports, fixtures)', async () => {
    const highest = (await get(`/releases/${app.appId}?per_page=1`)).json().items[0].version as number;
    await h.ctx.db
      .insertInto('releases')
      .values({ id: uuidv7(), application_id: app.appId, environment_id: stagingId, version: highest + 10, status: 'error', log_text: '' })
      .execute();
    const next = await h.app.inject({ method: 'POST', url: `/v1/releases/${app.appId}/create`, headers: alice.headers });
    expect(next.statusCode).toBe(202);
    expect(next.json().version).toBe(highest + 11);
  });

  it('shows repository_name as "" for a release that never got an image', async () => {
    const { id } = await new ReleasesRepository(h.ctx.db).insertNext(app.appId, stagingId, 'wind');
    const detail = (await get(`/releases/${id}/detail`)).json();
    expect(detail.repository_name).toBe('');
    expect(detail.environment).toBe('staging');
  });
});

describe('list totals kept by triggers (issue 15)', () => {
  const total = async (url: string) => (await get(url)).json().pagination.total as number;
  const counted = async (table: 'images' | 'releases' | 'deployments', environmentId?: string) => {
    let q = h.ctx.db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('application_id', '=', app.appId);
    if (environmentId) q = q.where('environment_id' as never, '=', environmentId as never);
    return Number((await q.executeTakeFirstOrThrow()).n);
  };

  it('answers the same totals as counting the rows, per environment and in all, and forgets a swept environment', async () => {
    const prodId = app.envId;
    expect(await total(`/images/${app.appId}`)).toBe(await counted('images'));
    expect(await total(`/releases/${app.appId}`)).toBe(await counted('releases'));
    expect(await total(`/releases/${app.appId}?environment=staging`)).toBe(await counted('releases', stagingId));
    expect(await total(`/releases/${app.appId}?environment=production`)).toBe(await counted('releases', prodId));
    expect(await total(`/applications/${app.appId}/deployments`)).toBe(await counted('deployments'));
    expect(await total(`/applications/${app.appId}/deployments?environment=staging`)).toBe(await counted('deployments', stagingId));

    // Deleting staging and sweeping it removes its records with it (cascade); the totals follow.
    const deleted = await h.app.inject({
      method: 'DELETE',
      url: `/v1/workspaces/${app.slugs.org}/projects/${app.slugs.project}/envs/staging`,
      headers: alice.headers,
    });
    expect(deleted.statusCode).toBe(204);
    expect(await sweepDeletedEnvironments(h.ctx.db, 0)).toBe(1);
    expect(await total(`/releases/${app.appId}`)).toBe(await counted('releases', prodId));
    expect(await total(`/applications/${app.appId}/deployments`)).toBe(await counted('deployments', prodId));
    const leftover = await h.ctx.db.selectFrom('row_counts').select('n').where('environment_id', '=', stagingId).execute();
    expect(leftover).toEqual([]);
  });
});
