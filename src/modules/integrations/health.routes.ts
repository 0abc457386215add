import { Type } from 'typebox';
import type { AppContext } from '../../platform/context.js';
import { isDatabaseUp } from '../../platform/db/database.js';
import type { App } from '../../platform/http/types.js';

const Health = Type.Object({ status: Type.String(), database: Type.String() }, { $id: 'Health' });

export function healthRoutes(ctx: AppContext) {
  return async (app: App) => {
    app.get(
      '/integrations/health',
      {
        config: { public: true },
        schema: { tags: ['Integrations'], summary: 'Liveness: ok when the database answers', response: { 200: Health, 503: Health } },
      },
      async (_request, reply) => {
        if (await isDatabaseUp(ctx.db)) return { status: 'ok', database: 'ok' };
        return reply.code(503).send({ status: 'unavailable', database: 'unreachable' });
      },
    );
  };
}
