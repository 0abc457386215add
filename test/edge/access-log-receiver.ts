/**
 * The Caddy access-log receiver alone in a process (run with a small heap by
 * caddy-access-log.test.ts): listens in the directory given as argv[2] (with Caddy's group id
 * argv[3] when given), prints `ready`, then
 * after each second prints what it counted as one JSON line ({entries, dropped}).
 */
import { CaddyAccessLog, type AccessLogDropReason } from '../../src/platform/edge/caddy-access-log.js';

const counts = { entries: 0, dropped: { malformed: 0, oversized: 0, unknown_host: 0 } as Record<AccessLogDropReason, number> };
const log = new CaddyAccessLog({
  directory: process.argv[2]!,
  ...(process.argv[3] ? { groupId: Number(process.argv[3]) } : {}),
  readEveryMs: 0,
  onEntry: () => counts.entries++,
  onDrop: (reason) => counts.dropped[reason]++,
});
await log.listen();
console.log('ready');
setInterval(() => console.log(JSON.stringify({ ...counts, heapMb: Math.round(process.memoryUsage().heapUsed / 1e6) })), 200);
process.on('SIGTERM', () => void log.close().then(() => process.exit(0)));
