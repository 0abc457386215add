/**
 * The built-in edge alone in its own process (as with SLIPWAY_ROLE=edge), routing one host
 * name to one upstream: `node --import tsx bench/edge-server.ts <upstream port>`; prints its port.
 */
import { RouterServer } from '../src/platform/edge/router-server.js';
import { RequestStats } from '../src/platform/edge/request-stats.js';
import type { Db } from '../src/platform/db/database.js';

const upstreamPort = Number(process.argv[2]);
const edge = new RouterServer({ host: '127.0.0.1', port: 0 });
edge.table.set('app.bench.localhost', [
  // An owner, so every request is counted as in production (no database: never flushed here).
  { instanceId: 'bench', host: '127.0.0.1', port: upstreamPort, owner: { applicationId: 'a', environmentId: 'e', processType: 'web' } },
]);
edge.useStats(new RequestStats(null as unknown as Db, 3_600_000));
console.log(await edge.listen());
process.on('SIGTERM', () => void edge.close().then(() => process.exit(0)));
