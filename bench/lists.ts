/**
 * List endpoints as the data grows: page 1 of each list at 10², 10³, 10⁴ and 10⁵ rows (issue 15's
 * target: p99 at 10⁵ within 1.5× of p99 at 10²). Slipway runs as `npm start` runs it; the rows are
 * seeded in bulk with SQL into its database (what years of API use would leave), then VACUUM
 * ANALYZE as autovacuum would. Cases are interleaved round by round; figures are medians.
 *
 *   npm run build && npx tsx bench/lists.ts [--rounds 3] [--duration 3] [--connections 10]
 *
 * Configuration variables stop at 10³: a scope holds at most CONFIG_MAX_VARIABLES_PER_SCOPE (1,000).
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { measureGets } from './lib/interleaved-gets.js';
import { startSlipway } from './lib/slipway.js';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    duration: { type: 'string', default: '3' },
    connections: { type: 'string', default: '10' },
  },
});
const SIZES = [100, 1_000, 10_000, 100_000];
const CONFIG_CAP = 1_000;

interface Case {
  endpoint: string;
  size: number;
  path: string;
  /** `endpoint @size`, for the bench's progress lines. */
  label: string;
}

async function seed(db: pg.Client, ctx: Awaited<ReturnType<typeof startSlipway>>['ctx']): Promise<Case[]> {
  const org = await ctx.api<{ id: string; slug: string }>('POST', '/v1/organizations', { name: 'Lists' });
  const cases: Case[] = [];
  for (const size of SIZES) {
    const project = await ctx.api<{ id: string; slug: string }>('POST', '/v1/projects', { name: `P${size}`, organization_id: org.id });
    const app = await ctx.api<{ id: string; slug: string }>('POST', '/v1/applications', { name: 'app-0', project_id: project.id });
    const env = (await db.query(`select id from environments where project_id = $1 and slug = 'production'`, [project.id])).rows[0].id;
    // Applications in the project (one already exists).
    await db.query(
      `insert into applications (id, project_id, name, slug) select gen_random_uuid(), $1, 'app-' || g, 'app-' || g from generate_series(1, $2) g`,
      [project.id, size - 1],
    );
    // Images, releases and deployments of one application: versions 1..size, oldest first.
    await db.query(
      `insert into images (id, application_id, version, status, built, repository_name, created_at)
       select gen_random_uuid(), $1, g, 'built', true, 'lists/app', now() - make_interval(secs => $2 - g) from generate_series(1, $2) g`,
      [app.id, size],
    );
    await db.query(
      `insert into releases (id, application_id, environment_id, version, status, built, image_ref, created_at)
       select gen_random_uuid(), $1, $2, i.version, 'built', true, i.id, i.created_at from images i where i.application_id = $1`,
      [app.id, env],
    );
    // Deployment ids are time-ordered (UUIDv7) in the platform: build them from the creation time.
    await db.query(
      `insert into deployments (id, application_id, environment_id, release_id, status, complete, created_at)
       select (lpad(to_hex((extract(epoch from r.created_at) * 1000)::bigint), 12, '0') || '7' || substr(md5(r.id::text), 1, 19))::uuid,
              $1, $2, r.id, 'complete', true, r.created_at
       from releases r where r.application_id = $1`,
      [app.id, env],
    );
    if (size <= CONFIG_CAP) {
      await db.query(
        `insert into config_vars (id, scope, scope_id, name, value) select gen_random_uuid(), 'application', $1, 'VAR_' || g, 'value-' || g from generate_series(1, $2) g`,
        [app.id, size],
      );
    }
    const base = `/v1`;
    const listCase = (endpoint: string, path: string): Case => ({ endpoint, size, path, label: `${endpoint} @${size}` });
    cases.push(
      listCase('applications in a project', `${base}/applications/${org.slug}/${project.slug}`),
      listCase('images of an application', `${base}/images/${app.id}`),
      listCase('releases of an application', `${base}/releases/${app.id}`),
      listCase('deployments of an application', `${base}/applications/${app.id}/deployments`),
    );
    if (size <= CONFIG_CAP) cases.push(listCase('configuration variables', `${base}/configurations/${app.id}`));
  }
  await db.query('vacuum analyze');
  return cases;
}

async function main() {
  const slipway = await startSlipway({ logLevel: 'info' });
  const db = new pg.Client({ connectionString: slipway.databaseUrl });
  try {
    await db.connect();
    const cases = await seed(db, slipway.ctx);
    const options = { rounds: Number(args.rounds), duration: Number(args.duration), connections: Number(args.connections) };
    const figures = await measureGets(slipway.ctx, cases, options);
    console.log(`\nmedians of ${args.rounds} interleaved rounds, ${args.duration} s each, ${args.connections} connections\n`);
    console.log('| list (page 1) | rows | req/s | p99 ms | p99 ÷ p99 at 10² |');
    console.log('|---|---:|---:|---:|---:|');
    for (const c of cases) {
      const smallest = cases.find((o) => o.endpoint === c.endpoint && o.size === SIZES[0])!;
      const f = figures.get(c)!;
      const ratio = f.p99 / Math.max(1, figures.get(smallest)!.p99);
      console.log(`| ${c.endpoint} | ${c.size} | ${Math.round(f.requestsPerSecond)} | ${f.p99} | ${ratio.toFixed(2)} |`);
    }
  } finally {
    await db.end().catch(() => {});
    await slipway.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
