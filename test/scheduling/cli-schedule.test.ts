/** `slipway cron …` and `slipway autoscale …` against a running server (the executable, as a user runs it). */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../helpers/harness.js';
import { seedApplication } from '../helpers/seed.js';
import { slipway, type CliResult } from '../cli/slipway.js';

let h: Harness;
let home: string;
let env: Record<string, string>;

beforeAll(async () => {
  h = await createHarness();
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  const address = h.app.server.address();
  if (!address || typeof address === 'string') throw new Error('no port');
  const user = await h.user();
  const { org, project, app } = await seedApplication(h, user, { org: 'Cron Org', project: 'Shop', app: 'Web' });
  home = mkdtempSync(join(tmpdir(), 'slipway-cli-home-'));
  env = {
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    SLIPWAY_SERVER: `http://127.0.0.1:${address.port}`,
    SLIPWAY_API_KEY: user.apiKey,
    SLIPWAY_APP: `${org.slug}/${project.slug}/${app.slug}`,
  };
}, 60_000);
afterAll(async () => {
  await h?.close();
  if (home) rmSync(home, { recursive: true, force: true });
});

const cli = (args: string[]) => slipway(args, env, { cwd: home });
const expectOk = (r: CliResult) => {
  expect(r.code, `stdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(0);
  return r;
};

describe('slipway cron and autoscale', () => {
  it('sets, lists and removes cron entries and autoscaling policies; a bad schedule or a missing target is refused', async () => {
    expect(expectOk(await cli(['cron', 'set', 'report', '0 6 * * *', '--', 'node', 'report.js', '--daily'])).stdout).toMatch(
      /Scheduled report \(0 6 \* \* \*\); next run/,
    );
    const listed = JSON.parse(expectOk(await cli(['cron', '--json'])).stdout);
    expect(listed).toMatchObject([{ name: 'report', schedule: '0 6 * * *', command: 'node report.js --daily', source: 'api' }]);
    expect(expectOk(await cli(['cron'])).stdout).toContain('report');
    expect(JSON.parse(expectOk(await cli(['cron', 'runs', 'report', '--json'])).stdout)).toEqual([]);
    const bad = await cli(['cron', 'set', 'broken', 'every day', '--', 'true']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('schedule');
    expectOk(await cli(['cron', 'rm', 'report']));
    expect(JSON.parse(expectOk(await cli(['cron', '--json'])).stdout)).toEqual([]);

    expect(expectOk(await cli(['autoscale', 'set', 'web', '--min', '1', '--max', '4', '--rps', '25', '--cooldown', '60'])).stdout).toBe(
      'Autoscaling web between 1 and 4 at 25 requests/s\n',
    );
    expect(JSON.parse(expectOk(await cli(['autoscale', '--json'])).stdout)).toMatchObject([
      { process_type: 'web', min: 1, max: 4, target: { requests_per_second: 25 }, cooldown_seconds: 60 },
    ]);
    expect((await cli(['autoscale', 'set', 'web', '--min', '1', '--max', '4'])).code).toBe(2);
    expect(JSON.parse(expectOk(await cli(['autoscale', 'events', '--json'])).stdout)).toEqual([]);
    expectOk(await cli(['autoscale', 'rm', 'web']));
    expect(JSON.parse(expectOk(await cli(['autoscale', '--json'])).stdout)).toEqual([]);
  }, 120_000);
});
