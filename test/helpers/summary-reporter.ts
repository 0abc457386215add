import type { Reporter, SerializedError, TestModule } from 'vitest/node';

/**
 * Prints the plain closing line CI reads: `tests: N passed, N failed, N skipped`.
 * Also fails the run when nothing ran or an error escaped the tests: vitest 4.1 exits 0
 * when the global setup throws (it then reports "No test files found").
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<SerializedError>) {
    let passed = 0, failed = 0, skipped = 0;
    for (const mod of modules) {
      for (const test of mod.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') passed++;
        else if (state === 'failed') failed++;
        else skipped++;
      }
    }
    process.stdout.write(`\ntests: ${passed} passed, ${failed} failed, ${skipped} skipped\n`);
    if (passed + failed === 0 || unhandledErrors.length > 0) {
      process.stdout.write(`test run failed: ${passed + failed === 0 ? 'no test ran' : `${unhandledErrors.length} unhandled error(s)`}\n`);
      process.exitCode = 1;
      // Vitest sets its own exit code after the reporters; make this one stick.
      process.on('exit', () => { process.exitCode = 1; });
    }
  }
}
