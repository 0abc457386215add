/**
 * The HAProxy driver alone in its own process (as with SLIPWAY_ROLE=edge EDGE_DRIVER=haproxy),
 * routing one host name to one upstream: the haproxy.cfg it renders (Host map, server slots,
 * `X-Forwarded-*`) and the `show stat` reads feeding the counters.
 * `node --import tsx bench/haproxy-edge-server.ts <upstream port> <port>`; prints `<port> <HAProxy master pid>`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findHaproxy } from '../src/config.js';
import { HaproxyDriver } from '../src/platform/edge/haproxy-driver.js';
import { RequestStats } from '../src/platform/edge/request-stats.js';
import type { Db } from '../src/platform/db/database.js';

const [upstreamPort, port] = [Number(process.argv[2]), Number(process.argv[3])];
const dir = mkdtempSync(join(tmpdir(), 'slipway-bench-haproxy-'));
const edge = new HaproxyDriver({
  binary: findHaproxy()!,
  directory: join(dir, 'haproxy'),
  host: '127.0.0.1',
  port,
});
edge.table.set('app.bench.localhost', [
  // An owner, so every answer is counted for an application as in production (no database: not flushed).
  { instanceId: 'bench', host: '127.0.0.1', port: upstreamPort, owner: { applicationId: 'a', environmentId: 'e', processType: 'web' } },
]);
edge.table.setReady('bench', true);
// Counted in memory as in production; never flushed here (no database).
edge.useStats(new RequestStats(null as unknown as Db, 3_600_000));
await edge.listen();
console.log(`${port} ${edge.masterProcess!.pid}`);
process.on(
  'SIGTERM',
  () =>
    void edge.close().then(() => {
      rmSync(dir, { recursive: true, force: true });
      process.exit(0);
    }),
);
