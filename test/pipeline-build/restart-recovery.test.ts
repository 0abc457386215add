import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SourceBuilder } from '../../src/platform/builder/index.js';
import { PipelineJobs } from '../../src/platform/jobs/pipeline-jobs.js';
import { ImagesRepository } from '../../src/pipeline/build/images.repository.js';
import { imageRecords, ImagesService } from '../../src/pipeline/index.js';
import { createCoreServices } from '../../src/services.js';
import { createRepositories } from '../../src/repositories.js';
import { ReleasesRepository } from '../../src/pipeline/release/releases.repository.js';
import { ReleasesService } from '../../src/pipeline/release/releases.service.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { TestRepo } from '../helpers/git-repo.js';
import { waitFor } from '../helpers/wait.js';
import { createApp } from './fixtures.js';

let h: Harness;
let repo: TestRepo;
let worker: ChildProcess | null = null;
const orphans: number[] = [];

beforeAll(async () => {
  // The API process: it enqueues, but runs no workers until it "restarts" below.
  h = await createHarness();
  h.ctx.jobs = new PipelineJobs({ db: h.ctx.db, pollIntervalMs: 100, heartbeatIntervalMs: 500 });
  await h.ctx.jobs.start();
  repo = new TestRepo();
});
afterAll(async () => {
  if (worker && worker.exitCode === null) worker.kill('SIGKILL');
  for (const pid of orphans) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  await h?.ctx.jobs?.stop();
  await h?.close();
  repo?.remove();
});

async function imageRow(id: string) {
  return h.ctx.db.selectFrom('images').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

describe('restart recovery', () => {
  it('fails a build left running by a killed worker, settles records whose job vanished, and lets the queue move on', async () => {
    // A build that runs until killed; it prints its pid so the test can clean up the orphan.
    repo.commit({ 'slipway.json': JSON.stringify({ build: 'echo "build pid $$"; exec sleep 120' }), Procfile: 'web: true\n' });
    const t = await createApp(h, { github_repository: repo.dir, auto_deploy_branch: 'main' });

    const first = await h.app.inject({ method: 'POST', url: `/v1/images/${t.appId}/build`, headers: t.user.headers });
    expect(first.statusCode).toBe(202);
    const firstId = first.json().image_id as string;

    // Another process takes the job and starts the build...
    worker = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'worker-process.ts')], {
      env: {
        ...process.env,
        DATABASE_URL: h.databaseUrl,
        DATA_DIR: h.dataDir,
        LOG_LEVEL: 'silent',
        SOURCE_PATH_ALLOWLIST: h.ctx.config.SOURCE_PATH_ALLOWLIST,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const pidLine = await waitFor(
      'the build pid in the log',
      async () => {
        const row = await imageRow(firstId);
        return /build pid (\d+)/.exec(row.log_text)?.[1];
      },
      60_000,
      100,
    );
    orphans.push(Number(pidLine));
    expect((await imageRow(firstId)).status).toBe('building');

    // ...a second build of the same application waits behind it...
    repo.commit({ 'slipway.json': JSON.stringify({ build: 'echo second build' }) });
    const second = await h.app.inject({ method: 'POST', url: `/v1/images/${t.appId}/build`, headers: t.user.headers });
    const secondId = second.json().image_id as string;

    // ...and the worker process dies without a chance to clean up.
    worker.kill('SIGKILL');
    await new Promise((r) => worker!.once('exit', r));

    // Records whose job vanished: a build recorded but never queued (the server died between
    // the two), and a release whose job finished without settling it.
    const other = await createApp(h, { github_repository: repo.dir });
    const neverQueued = await new ImagesRepository(h.ctx.db).insertNext(other.appId, {
      repository_name: 'x/y/z',
      build_ref: 'main',
      environment_id: null,
      built_for_preview: false,
    });
    const env = await h.ctx.db
      .selectFrom('environments')
      .select('environments.id')
      .innerJoin('applications', 'applications.project_id', 'environments.project_id')
      .where('applications.id', '=', other.appId)
      .executeTakeFirstOrThrow();
    const orphanRelease = await new ReleasesRepository(h.ctx.db).insertNext(other.appId, env.id, 'wind');
    await h.ctx.db
      .updateTable('releases')
      .set({ job_id: '00000000-0000-4000-8000-000000000000' })
      .where('id', '=', orphanRelease.id)
      .execute();
    const tenMinutesAgo = new Date(Date.now() - 10 * 60_000);
    await h.ctx.db.updateTable('images').set({ created_at: tenMinutesAgo }).where('id', '=', neverQueued.id).execute();
    await h.ctx.db.updateTable('releases').set({ created_at: tenMinutesAgo }).where('id', '=', orphanRelease.id).execute();

    // The server starts again: its workers find the dead worker's job on start.
    const repos = createRepositories(h.ctx.db);
    const { apps, config } = createCoreServices(h.ctx, repos);
    new ReleasesService(h.ctx, repos.releases, imageRecords(repos.images), apps, config).registerJobs(h.ctx.jobs!);
    new ImagesService(h.ctx, repos.images, apps, config, [new SourceBuilder(join(h.dataDir, 'cache'))]).registerJobs(h.ctx.jobs!);
    const restartedAt = Date.now();
    await h.ctx.jobs!.startWorkers();

    const failed = await imageRow(firstId);
    expect(failed).toMatchObject({ status: 'error', error: true, built: false });
    expect(failed.error_detail).toMatch(/^interrupted by a restart/);
    expect(failed.log_text).toContain('interrupted by a restart');
    // The build's process group, which outlived its worker, is ended by the recovery.
    await waitFor(
      'the orphaned build process to end',
      async () => {
        try {
          process.kill(Number(pidLine), 0);
          return false;
        } catch {
          return true;
        }
      },
      5000,
      50,
    );
    const next = await waitFor(
      'the second build',
      async () => {
        const row = await imageRow(secondId);
        return row.status === 'building' ? null : row;
      },
      30_000,
    );
    expect(next).toMatchObject({ status: 'built', version: 2 });
    expect(Date.now() - restartedAt).toBeLessThan(15_000);
    // Abandoned records are settled too; the queued second build (its job alive) was not.
    expect(await imageRow(neverQueued.id)).toMatchObject({ status: 'error', error_detail: expect.stringMatching(/^abandoned: /) });
    const release = await h.ctx.db.selectFrom('releases').selectAll().where('id', '=', orphanRelease.id).executeTakeFirstOrThrow();
    expect(release).toMatchObject({ status: 'error', error: true, error_detail: expect.stringMatching(/^abandoned: /) });
    const workers = await h.ctx.db.selectFrom('workers').select('id').execute();
    expect(workers.map((w) => w.id)).toEqual([h.ctx.jobs!.workerId]);
  });
});
