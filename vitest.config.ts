import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    reporters: ['default', './test/helpers/summary-reporter.ts'],
    pool: 'forks',
    // Test files at once. Vitest's default is one less than the CPUs: 1 on CI's 2 cores, where a
    // file mostly waits (deploys, health checks, child processes: review-variants used 35 s of CPU
    // in 133 s), so the second core idled. Two, not three: on the loaded machine three at once
    // timed out files that start whole platform processes (docs/development.md "CI time").
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
