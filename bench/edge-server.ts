/**
 * The built-in edge alone in its own process (as with SLIPWAY_ROLE=edge), routing one host
 * name to one upstream: `node --import tsx bench/edge-server.ts <upstream port>`; prints its port.
 */
import { RouterServer } from '../src/platform/edge/router-server.js';

const upstreamPort = Number(process.argv[2]);
const edge = new RouterServer({ host: '127.0.0.1', port: 0 });
edge.table.set('app.bench.localhost', [{ instanceId: 'bench', host: '127.0.0.1', port: upstreamPort }]);
console.log(await edge.listen());
process.on('SIGTERM', () => void edge.close().then(() => process.exit(0)));
