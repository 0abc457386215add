/**
 * The nginx driver alone in its own process (as with SLIPWAY_ROLE=edge EDGE_DRIVER=nginx),
 * routing one host name to one upstream: the nginx.conf it renders (keepalive upstream,
 * `X-Forwarded-*`, its access log: a plain `route status seconds` line) and the access-log reader feeding the counters.
 * `node --import tsx bench/nginx-edge-server.ts <upstream port> <port>`; prints `<port> <nginx master pid>`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findNginx } from '../src/config.js';
import { NginxDriver } from '../src/platform/edge/nginx-driver.js';
import { RequestStats } from '../src/platform/edge/request-stats.js';
import type { Db } from '../src/platform/db/database.js';

const [upstreamPort, port] = [Number(process.argv[2]), Number(process.argv[3])];
const dir = mkdtempSync(join(tmpdir(), 'slipway-bench-nginx-'));
const edge = new NginxDriver({
  binary: findNginx()!,
  directory: join(dir, 'nginx'),
  host: '127.0.0.1',
  port,
});
edge.table.set('app.bench.localhost', [
  // An owner, so every access-log line is mapped to an application as in production (no database: not flushed).
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
