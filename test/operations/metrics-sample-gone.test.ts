import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../helpers/harness.js';
import { createApp, type TestApp } from '../pipeline-build/fixtures.js';
import { MetricsSampler } from '../../src/modules/observability/metrics-sampler.js';
import type { ApplicationRuntime, AppUsage } from '../../src/platform/runtime/application-runtime.js';

/**
 * Issue 30: "a metrics sample with no process logs an error". An instance outlives its
 * application's row for a moment when the application is deleted (its processes stop after),
 * so a sample may hold a reading of an application that is gone. That reading is skipped at
 * debug level; the other applications' readings are stored and nothing is logged as an error.
 * The runtime here answers the readings a real one answered in that moment; the database, the
 * applications and their deletion are real (through the API).
 */
let h: Harness;
let kept: TestApp;
let deleted: TestApp;
const envOf = async (appId: string) =>
  (
    await h.ctx.db
      .selectFrom('environments')
      .innerJoin('applications', 'applications.project_id', 'environments.project_id')
      .select('environments.id')
      .where('applications.id', '=', appId)
      .where('environments.slug', '=', 'production')
      .executeTakeFirstOrThrow()
  ).id;

beforeAll(async () => {
  h = await createHarness();
  [kept, deleted] = [await createApp(h), await createApp(h)];
});
afterAll(async () => {
  await h?.close();
});

describe('metrics sample of an application deleted while its instance still runs', () => {
  it('stores the others, skips it at debug level and logs no error', async () => {
    const reading = (applicationId: string, environmentId: string): AppUsage => ({
      applicationId,
      environmentId,
      cpuMillicores: 5,
      memoryBytes: 1024,
      podCount: 1,
      restartCount: 0,
    });
    const readings = [reading(kept.appId, await envOf(kept.appId)), reading(deleted.appId, await envOf(deleted.appId))];
    const gone = await h.app.inject({ method: 'DELETE', url: `/v1/applications/${deleted.appId}`, headers: deleted.user.headers });
    expect(gone.statusCode, gone.body).toBeLessThan(300);
    expect(await h.ctx.db.selectFrom('applications').select('id').where('id', '=', deleted.appId).executeTakeFirst()).toBeUndefined();

    const logged: Array<{ level: string; msg: string }> = [];
    const logger = Object.fromEntries(
      ['info', 'warn', 'error', 'debug'].map((level) => [level, (_: object, msg = '') => logged.push({ level, msg })]),
    ) as unknown as ConstructorParameters<typeof MetricsSampler>[3];
    const runtime = { sharedWorkloads: false, usage: async () => readings } as unknown as ApplicationRuntime;
    const heard: AppUsage[][] = [];
    const sampler = new MetricsSampler(h.ctx.db, runtime, 60, logger, [async (stored) => heard.push(stored)]);

    expect(await sampler.sampleOnce()).toBe(2);
    const stored = await h.ctx.db.selectFrom('metric_samples').select(['application_id', 'pod_count']).execute();
    expect(stored).toEqual([{ application_id: kept.appId, pod_count: 1 }]);
    expect(heard).toEqual([[readings[0]]]);
    expect(logged.filter((l) => l.level === 'error')).toEqual([]);
    expect(logged).toEqual([{ level: 'debug', msg: expect.stringMatching(/application or environment is deleted/) }]);
  });
});
