import type { BenchCase } from '../lib/case.js';

/** The control plane's hottest reads: an application's detail and its configuration list. */
const cases: BenchCase[] = [
  {
    name: 'GET application detail',
    handwritten: true,
    async prepare(ctx) {
      const w = await ctx.world();
      return { path: `/v1/applications/${w.org.slug}/${w.project.slug}/${w.app.slug}`, headers: ctx.auth };
    },
  },
  {
    name: 'GET config list (20 vars, 5 secret)',
    handwritten: true,
    async prepare(ctx) {
      const w = await ctx.world();
      const existing = await ctx.api<unknown[]>('GET', `/v1/configurations/${w.app.id}`);
      if (existing.length === 0) {
        const plain = Object.fromEntries(Array.from({ length: 15 }, (_, i) => [`SETTING_${i}`, `value-${i}-${'x'.repeat(40)}`]));
        const secret = Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`SECRET_${i}`, `s3cr3t-${i}-${'y'.repeat(40)}`]));
        await ctx.api('POST', `/v1/configurations/${w.app.id}/bulk`, { variables: plain });
        await ctx.api('POST', `/v1/configurations/${w.app.id}/bulk`, { variables: secret, secret: true });
      }
      return { path: `/v1/configurations/${w.app.id}`, headers: ctx.auth };
    },
  },
];

export default cases;
