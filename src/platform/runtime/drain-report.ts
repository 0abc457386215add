import type { EdgeDriver } from '../edge/edge-driver.js';

/** How often a draining instance's open connections are told. */
export const DRAIN_REPORT_INTERVAL_MS = 5000;

const connections = (n: number) => `${n} open connection${n === 1 ? '' : 's'}`;

/**
 * Tells, while `drained` is pending, each instance that still has open connections at the edge
 * ("web.1 (v3) draining: 4 open connections, up to 26 s left") every few seconds, then
 * "web.1 (v3) drained" once it has none, or that the drain time ran out. An instance with no
 * open connection when the drain starts is not mentioned (it stops at once).
 */
export async function reportDrain(
  names: Map<string, string>,
  drained: Promise<unknown>,
  timeoutMs: number,
  edge: Pick<EdgeDriver, 'openConnections'>,
  report: (line: string) => void,
): Promise<void> {
  const open = (id: string) => edge.openConnections?.(id) ?? 0;
  const until = Date.now() + timeoutMs;
  const draining = new Set([...names.keys()].filter((id) => open(id) > 0));
  const tell = () => {
    const secondsLeft = Math.max(0, Math.ceil((until - Date.now()) / 1000));
    for (const id of [...draining]) {
      const n = open(id);
      if (n > 0) {
        report(`${names.get(id)} draining: ${connections(n)}, up to ${secondsLeft} s left`);
        continue;
      }
      report(`${names.get(id)} drained`);
      draining.delete(id);
    }
  };
  if (draining.size === 0) return void (await drained);
  tell();
  const timer = setInterval(tell, DRAIN_REPORT_INTERVAL_MS);
  try {
    await drained;
  } finally {
    clearInterval(timer);
  }
  for (const id of draining) {
    const n = open(id);
    report(
      n > 0
        ? `${names.get(id)} still had ${connections(n)} after ${Math.round(timeoutMs / 1000)} s (ROUTER_DRAIN_TIMEOUT_MS): stopping it`
        : `${names.get(id)} drained`,
    );
  }
}
