/**
 * The Caddy driver alone in its own process (as with SLIPWAY_ROLE=edge EDGE_DRIVER=caddy),
 * routing one host name to one upstream through a running Caddy: the configuration it renders,
 * the SRV name server Caddy reads the instance from, and the access log it counts from.
 * `node --import tsx bench/caddy-edge-server.ts <upstream port> <caddy admin URL> <port>`; prints its port.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CaddyDriver } from '../src/platform/edge/caddy-driver.js';
import { RequestStats } from '../src/platform/edge/request-stats.js';
import type { Db } from '../src/platform/db/database.js';

const [upstreamPort, adminUrl, port] = [Number(process.argv[2]), process.argv[3]!, Number(process.argv[4])];
const edge = new CaddyDriver({
  adminUrl,
  host: '127.0.0.1',
  port,
  certificates: 'platform',
  accessLogDirectory: join(mkdtempSync(join(tmpdir(), 'slipway-bench-edge-')), 'edge'),
});
edge.table.set('app.bench.localhost', [
  // An owner, so every access-log line is mapped to an application as in production (no database: not flushed).
  { instanceId: 'bench', host: '127.0.0.1', port: upstreamPort, owner: { applicationId: 'a', environmentId: 'e', processType: 'web' } },
]);
// Counted in memory as in production; never flushed here (no database).
edge.useStats(new RequestStats(null as unknown as Db, 3_600_000));
console.log(await edge.listen());
process.on('SIGTERM', () => void edge.close().then(() => process.exit(0)));
