import type { BenchCase, BenchContext } from '../lib/case.js';

/** Writes (issue 35), each against the best hand-written route doing the same writes in one transaction. */
let writesApp: Promise<{ id: string }> | undefined;
// An application of their own, so the read cases' configuration list keeps its 20 variables.
const appForWrites = (ctx: BenchContext) =>
  (writesApp ??= ctx
    .world()
    .then((w) => ctx.api<{ id: string }>('POST', '/v1/applications', { name: 'Writes', project_id: w.project.id })));

const json = (headers: Record<string, string>) => ({ ...headers, 'content-type': 'application/json' });

const hundred = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`BULK_${i}`, `value-${i}-${'z'.repeat(40)}`]));

const cases: BenchCase[] = [
  {
    name: 'POST config set (1 variable)',
    handwritten: true,
    async prepare(ctx) {
      const app = await appForWrites(ctx);
      return {
        path: `/v1/configurations/${app.id}/bulk`,
        method: 'POST',
        headers: json(ctx.auth),
        body: JSON.stringify({ variables: { LOG_FORMAT: 'json' } }),
      };
    },
  },
  {
    name: 'POST bulk config (100 variables)',
    handwritten: true,
    async prepare(ctx) {
      const app = await appForWrites(ctx);
      return {
        path: `/v1/configurations/${app.id}/bulk`,
        method: 'POST',
        headers: json(ctx.auth),
        body: JSON.stringify({ variables: hundred }),
      };
    },
  },
  {
    name: 'POST create a release',
    handwritten: true,
    async prepare(ctx) {
      const app = await appForWrites(ctx);
      return { path: `/v1/releases/${app.id}/create`, method: 'POST', headers: ctx.auth };
    },
  },
];

export default cases;
