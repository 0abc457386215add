import { Type } from 'typebox';
import type { AppContext } from '../../platform/context.js';
import { DATABASE_RETRY_AFTER_SECONDS } from '../../platform/db/availability.js';
import { isDatabaseUp } from '../../platform/db/database.js';
import type { App } from '../../platform/http/types.js';
import { diskSpace, DiskSpaceMonitor } from '../../platform/storage/disk-space.js';

const ComponentState = Type.Union([Type.Literal('ok'), Type.Literal('down'), Type.Literal('absent')], {
  description: "ok; down; or absent: this process does not run it (its role, or the cluster's runtime)",
});

const Health = Type.Object(
  {
    status: Type.String({ description: 'ok, or unavailable (503) when a component this process runs is down' }),
    database: Type.String({ description: 'ok or unreachable (as components.database)' }),
    disk: Type.String({ description: "DATA_DIR's filesystem: ok, low (below DISK_LOW_FREE_MB), full, or unknown" }),
    components: Type.Object(
      {
        database: ComponentState,
        job_store: { ...ComponentState, description: 'The pipeline job queue (in PostgreSQL, so down with it)' },
        runtime: { ...ComponentState, description: 'What runs the deployed applications' },
        edge: { ...ComponentState, description: "The router serving the applications from this process's memory" },
      },
      { description: 'Each component of this process: which one is down' },
    ),
  },
  { $id: 'Health' },
);

/** Longer than this, the database counts as down for the health check (a pool waiting on a silent host). */
const DATABASE_PROBE_TIMEOUT_MS = 3000;

function probeDatabase(ctx: AppContext): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), DATABASE_PROBE_TIMEOUT_MS);
  });
  return Promise.race([isDatabaseUp(ctx.db), late]).finally(() => clearTimeout(timer));
}

export function healthRoutes(ctx: AppContext) {
  return async (app: App) => {
    const lowBelowBytes = ctx.config.DISK_LOW_FREE_MB * 1024 * 1024;
    // The periodic free-space check lives as long as the API: its warning is the operator's notice before the disk fills.
    const monitor = new DiskSpaceMonitor(ctx.config.dataDir, lowBelowBytes, ctx.config.DISK_CHECK_INTERVAL_SECONDS * 1000, app.log);
    app.addHook('onReady', async () => monitor.start());
    app.addHook('onClose', async () => monitor.stop());

    app.get(
      '/integrations/health',
      {
        config: { public: true },
        schema: {
          tags: ['Integrations'],
          summary: 'Liveness: ok when every component of this process works (503 names the one that is down); how much disk DATA_DIR has',
          response: { 200: Health, 503: Health },
        },
      },
      async (_request, reply) => {
        const disk = (await diskSpace(ctx.config.dataDir, lowBelowBytes)).state;
        const databaseUp = await probeDatabase(ctx);
        const database = databaseUp ? 'ok' : 'down';
        // The job queue lives in PostgreSQL: without it nothing can be queued or run.
        const jobStore = !ctx.jobs ? 'absent' : ctx.jobs.isOpen && databaseUp ? 'ok' : 'down';
        const runtime = ctx.runtime ? 'ok' : 'absent';
        // The in-process edge serves from memory, so it keeps serving while the database is away.
        const router = ctx.runtime?.router;
        const edge = !router ? 'absent' : router.listening ? 'ok' : 'down';
        const components = { database, job_store: jobStore, runtime, edge } as const;
        const up = Object.values(components).every((state) => state !== 'down');
        if (!databaseUp) reply.header('retry-after', String(DATABASE_RETRY_AFTER_SECONDS));
        return reply
          .code(up ? 200 : 503)
          .send({ status: up ? 'ok' : 'unavailable', database: databaseUp ? 'ok' : 'unreachable', disk, components });
      },
    );
  };
}
