/**
 * Issue 35 goal 7, the scale of the data: an organization of 10⁴ applications × 10 environments (1,000
 * projects of 10 applications, each project with 10 environments, a release and a deployment per
 * application and environment) and 10⁶ runtime log lines in one application. The pages a person opens
 * first must still answer p99 < 100 ms: the overview of what they can see (its first page, as the dashboard's home asks), a project's applications, and
 * the log search (the newest lines, a common word, a rare one, a word that is nowhere).
 *
 * Slipway runs as `npm start` runs it; the rows are seeded in bulk with SQL into its database (what years
 * of use would leave), then VACUUM ANALYZE as autovacuum would. Cases are interleaved round by round;
 * figures are medians.
 *
 *   npm run build && npx tsx bench/scale.ts [--rounds 3] [--duration 3] [--connections 10] [--log-lines 1000000] [--profile DIR]
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
    projects: { type: 'string', default: '1000' },
    'log-lines': { type: 'string', default: '1000000' },
    // Writes a V8 CPU profile of the server (Chrome DevTools, speedscope) when it stops.
    profile: { type: 'string' },
  },
});
const APPS_PER_PROJECT = 10;
const ENVIRONMENTS_PER_PROJECT = 10;
/** One line in this many says "payment failed": the rare word of the search cases. */
const RARE_EVERY = 100_000;

interface Case {
  label: string;
  path: string;
}

type Ctx = Awaited<ReturnType<typeof startSlipway>>['ctx'];

async function seed(db: pg.Client, ctx: Ctx): Promise<Case[]> {
  const started = performance.now();
  const org = await ctx.api<{ id: string; slug: string }>('POST', '/v1/organizations', { name: 'Scale' });
  const project = await ctx.api<{ id: string; slug: string }>('POST', '/v1/projects', { name: 'p-0', organization_id: org.id });
  const app = await ctx.api<{ id: string; slug: string }>('POST', '/v1/applications', { name: 'app-0', project_id: project.id });
  const projects = Number(args.projects);
  await db.query(
    `insert into projects (id, organization_id, name, slug, created_at, updated_at)
     select gen_random_uuid(), $1, 'p-' || g, 'p-' || g, now(), now() from generate_series(1, $2 - 1) g`,
    [org.id, projects],
  );
  // Each project: ten environments in all (the API made production, and maybe more, for the first).
  await db.query(
    `insert into environments (id, project_id, name, slug, env_type, created_at, updated_at)
     select gen_random_uuid(), p.id, 'env-' || g, 'env-' || g, case when g = 1 then 'production' else 'staging' end, now(), now()
     from projects p cross join generate_series(1, $2) g
     where p.organization_id = $1 and not exists (select 1 from environments e where e.project_id = p.id and e.slug = 'env-' || g)
       and (select count(*) from environments e where e.project_id = p.id) + g <= $2`,
    [org.id, ENVIRONMENTS_PER_PROJECT],
  );
  await db.query(
    `insert into applications (id, project_id, name, slug)
     select gen_random_uuid(), p.id, 'app-' || g, 'app-' || g from projects p cross join generate_series(0, $2 - 1) g
     where p.organization_id = $1 and not exists (select 1 from applications a where a.project_id = p.id and a.slug = 'app-' || g)`,
    [org.id, APPS_PER_PROJECT],
  );
  // One built image per application, and a release and a finished deployment of it in each environment.
  await db.query(
    `insert into images (id, application_id, version, status, built, repository_name, created_at)
     select gen_random_uuid(), a.id, 1, 'built', true, 'scale/app', now() - interval '1 day'
     from applications a join projects p on p.id = a.project_id where p.organization_id = $1`,
    [org.id],
  );
  await db.query(
    `insert into releases (id, application_id, environment_id, version, status, built, image_ref, created_at)
     select gen_random_uuid(), a.id, e.id, row_number() over (partition by a.id order by e.slug), 'built', true, i.id,
            now() - interval '1 hour'
     from applications a join projects p on p.id = a.project_id join environments e on e.project_id = p.id
     join images i on i.application_id = a.id where p.organization_id = $1`,
    [org.id],
  );
  await db.query(
    `insert into deployments (id, application_id, environment_id, release_id, status, complete, created_at)
     select (lpad(to_hex((extract(epoch from r.created_at) * 1000)::bigint), 12, '0') || '7' || substr(md5(r.id::text), 1, 19))::uuid,
            r.application_id, r.environment_id, r.id, 'complete', true, r.created_at
     from releases r join applications a on a.id = r.application_id join projects p on p.id = a.project_id where p.organization_id = $1`,
    [org.id],
  );
  const production = (await db.query(`select id from environments where project_id = $1 and slug = 'production'`, [project.id])).rows[0]
    .id as string;
  // The log lines of one application, oldest first, over the last hour.
  const lines = Number(args['log-lines']);
  await db.query(
    `insert into app_log_lines (application_id, environment_id, instance_id, process_type, stream, line, logged_at)
     select $1, $2, 'web.' || (g % 3 + 1), 'web', 'stdout',
            case when g % $4 = 0 then 'ERROR payment failed for order ' || g
                 else 'GET /items/' || (g % 997) || ' 200 in ' || (g % 50) || ' ms' end,
            now() - make_interval(secs => ($3 - g) * 3600.0 / $3)
     from generate_series(1, $3) g`,
    [app.id, production, lines, RARE_EVERY],
  );
  await db.query('vacuum analyze');
  const counts = (
    await db.query(
      `select (select count(*) from applications a join projects p on p.id = a.project_id where p.organization_id = $1) as apps,
              (select count(*) from environments e join projects p on p.id = e.project_id where p.organization_id = $1) as envs,
              (select count(*) from deployments) as deployments,
              (select count(*) from app_log_lines where application_id = $2) as lines`,
      [org.id, app.id],
    )
  ).rows[0];
  console.error(
    `seeded in ${((performance.now() - started) / 1000).toFixed(1)} s: ${counts.apps} applications, ${counts.envs} environments, ` +
      `${counts.deployments} deployments, ${counts.lines} log lines`,
  );
  const logs = `/v1/applications/${app.id}/logs`;
  const cases: Case[] = [
    { label: "projects of the caller's organizations (the whole list)", path: '/v1/projects' },
    { label: 'projects: the first page of 100', path: '/v1/projects?per_page=100' },
    { label: "a project's applications", path: `/v1/applications/${org.slug}/${project.slug}` },
    { label: 'application detail', path: `/v1/applications/${org.slug}/${project.slug}/${app.slug}` },
    { label: 'logs: newest 100', path: logs },
    { label: 'logs: search a common word', path: `${logs}?search=items` },
    { label: `logs: search a rare phrase (1 in ${RARE_EVERY})`, path: `${logs}?search=payment%20failed` },
    { label: 'logs: search a word that is nowhere', path: `${logs}?search=no-such-word` },
  ];
  // The home overview, where this build has one, and its first page of 50 (what the dashboard's home asks for), where it pages.
  const answers = async (path: string) => {
    const res = await fetch(`${ctx.appUrl}${path}`, { headers: ctx.auth });
    await res.arrayBuffer();
    return res.ok;
  };
  const firstPage = '/v1/overview?page=1&per_page=50';
  if (await answers(firstPage)) {
    cases.unshift(
      { label: 'home overview: the first page of 50', path: firstPage },
      { label: 'home overview: page 100 of 50 (offset 4,950)', path: '/v1/overview?page=100&per_page=50' },
    );
  }
  if (await answers('/v1/overview')) cases.unshift({ label: 'home overview (the first 200)', path: '/v1/overview' });
  return cases;
}

async function main() {
  const slipway = await startSlipway({
    logLevel: 'info',
    nodeFlags: args.profile ? ['--cpu-prof', `--cpu-prof-dir=${args.profile}`] : [],
  });
  const db = new pg.Client({ connectionString: slipway.databaseUrl });
  try {
    await db.connect();
    const cases = await seed(db, slipway.ctx);
    const options = { rounds: Number(args.rounds), duration: Number(args.duration), connections: Number(args.connections) };
    const figures = await measureGets(slipway.ctx, cases, options);
    const [load] = (await import('node:os')).loadavg();
    console.log(
      `\nmedians of ${args.rounds} interleaved rounds, ${args.duration} s each, ${args.connections} connections, load average ${load!.toFixed(1)}\n`,
    );
    console.log('| page | req/s | p99 ms | goal p99 < 100 ms |');
    console.log('|---|---:|---:|---|');
    for (const c of cases) {
      const f = figures.get(c)!;
      console.log(`| ${c.label} | ${Math.round(f.requestsPerSecond)} | ${f.p99} | ${f.p99 < 100 ? 'met' : 'not met'} |`);
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
