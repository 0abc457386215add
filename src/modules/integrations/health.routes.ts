import { Type } from 'typebox';
import type { AppContext } from '../../platform/context.js';
import { isDatabaseUp } from '../../platform/db/database.js';
import type { App } from '../../platform/http/types.js';
import { diskSpace, DiskSpaceMonitor } from '../../platform/storage/disk-space.js';

const Health = Type.Object(
  {
    status: Type.String(),
    database: Type.String(),
    disk: Type.String({ description: "DATA_DIR's filesystem: ok, low (below DISK_LOW_FREE_MB), full, or unknown" }),
  },
  { $id: 'Health' },
);

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
          summary: 'Liveness: ok when the database answers; says how much disk DATA_DIR has',
          response: { 200: Health, 503: Health },
        },
      },
      async (_request, reply) => {
        const disk = (await diskSpace(ctx.config.dataDir, lowBelowBytes)).state;
        if (await isDatabaseUp(ctx.db)) return { status: 'ok', database: 'ok', disk };
        return reply.code(503).send({ status: 'unavailable', database: 'unreachable', disk });
      },
    );
  };
}
