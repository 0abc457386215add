export interface WaitOptions {
  /** Give up after this long (default 30 s). */
  timeout?: number;
  /** Time between probes (default 100 ms). */
  every?: number;
}

/**
 * The tests' one way to wait for something: polls `probe` until it returns a truthy value
 * (returned) or the timeout passes, then throws naming `what` and the last value seen.
 * Tests wait on a condition like this, never on a fixed sleep.
 */
export async function waitFor<T>(
  what: string,
  probe: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  options: WaitOptions | number = {},
  everyMs?: number,
): Promise<T> {
  const { timeout = 30_000, every = 100 } = typeof options === 'number' ? { timeout: options, every: everyMs } : options;
  const end = Date.now() + timeout;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out after ${timeout} ms waiting for ${what} (last value: ${JSON.stringify(value)})`);
    await new Promise((r) => setTimeout(r, every));
  }
}
