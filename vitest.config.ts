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
    // Each worker process runs its files one after another on one module cache: the platform's sources
    // (Fastify, TypeBox schemas, Kysely, pg: ~2.5 s of CPU) are imported once per worker instead of once
    // per file (the suite's import time went from 437 s to 31 s). Every file makes its own harness,
    // database and data directory; the few module-level counters in src/ (background failures) are
    // read by tests against their value before.
    // `npx vitest run --isolate` runs each file in a fresh process again.
    isolate: false,
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
