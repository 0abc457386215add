/**
 * One platform process, as main.ts runs it in SLIPWAY_ROLE (all, api or worker), on
 * DATABASE_URL: opened, built, started, stopped and closed. Prints one JSON line with the
 * process's active resources (process.getActiveResourcesInfo()) at each step.
 */
import { createHook } from 'node:async_hooks';
import { pino } from 'pino';
import { loadConfig } from '../../src/config.js';
import { start } from '../../src/lifecycle.js';
import { openPlatform } from '../../src/platform/bootstrap.js';
import { composePlatform } from '../../src/services.js';

const settle = async () => {
  // Closed handles leave the list on a later turn of the event loop.
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
};
// Not the platform's: a terminal, and the channel of the module-tracing hook (trace-modules.mjs).
const resources = () => process.getActiveResourcesInfo().filter((r) => r !== 'TTYWrap' && r !== 'MessagePort');

// getActiveResourcesInfo() leaves out unref'd timers: every timer, socket, server and child
// process the platform creates is also followed from its creation to its end.
const followed = new Map<number, { type: string; stack: string }>();
const FOLLOWED = new Set(['Timeout', 'TCPWRAP', 'PIPEWRAP', 'TCPSERVERWRAP', 'PIPESERVERWRAP', 'PROCESSWRAP']);
createHook({
  init(id, type) {
    // Where it was made, to say what was left behind when something is.
    if (FOLLOWED.has(type))
      followed.set(id, {
        type,
        stack: new Error()
          .stack!.split('\n')
          .filter((line) => line.includes('file://') || line.includes('/src/'))
          .slice(0, 6)
          .join('\n'),
      });
  },
  destroy(id) {
    followed.delete(id);
  },
}).enable();
const live = () => [...followed.values()].map((r) => r.type);

const config = loadConfig();
const logger = pino({ level: 'silent' });
await settle();
const before = resources();
const liveBefore = live();
const platform = await openPlatform(config, () => {}, { jobsLogger: logger });
await settle();
const opened = resources();
const liveOpened = live();
const composition = composePlatform(platform.ctx, logger);
const app =
  config.SLIPWAY_ROLE === 'worker'
    ? null
    : await (await import('../../src/app.js')).buildApp(platform.ctx, { composition, loggerInstance: logger });
await settle();
const built = resources();
const liveBuilt = live();
const running = await start({
  composition,
  logger,
  workers: config.SLIPWAY_ROLE !== 'api',
  http: app ? { app, listen: { port: config.PORT, host: config.HOST } } : undefined,
});
await settle();
const started = resources();
const liveStarted = live();
await running.stop();
await platform.close();
// A destroyed socket leaves the list once its close completes: wait for that (10 s at most),
// so what remains is what was never closed.
const same = (a: string[], b: string[]) => a.length === b.length && [...a].sort().join() === [...b].sort().join();
let stopped = resources();
let liveAfter = live();
for (let waited = 0; !(same(stopped, before) && same(liveAfter, liveBefore)) && waited < 10_000; waited += 50) {
  await new Promise((r) => setTimeout(r, 50));
  await settle(); // the end of that very timer is told on a later turn
  stopped = resources();
  liveAfter = live();
}
const leftBehind = [...followed.values()].map((r) => `${r.type}${r.stack}`);
console.log(
  JSON.stringify({
    leftBehind,
    before,
    opened,
    built,
    started,
    stopped,
    liveBefore,
    liveOpened,
    liveBuilt,
    liveStarted,
    liveAfter,
    apiUrl: running.apiUrl,
  }),
);
