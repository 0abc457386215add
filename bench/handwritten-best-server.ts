/**
 * The best hand-written baseline (issue 35): the routes the API bench measures, written the way
 * one would write them by hand for speed, over Slipway's own database (DATABASE_URL):
 *
 * - credentials cached in process for 5 s (as CREDENTIAL_CACHE_SECONDS does), so a request
 *   costs no key lookup while its entry is fresh;
 * - every read one named prepared statement (pg prepares it once per pooled connection):
 *   the application with the caller's membership and its latest image, release and deployment;
 *   the configuration list with the membership check folded in;
 * - every write one transaction: the checks Slipway makes (membership, protected environment,
 *   the scope's size cap, the pipeline's queue cap) then the same rows written (a bulk upsert of
 *   the variables in one statement; a release, its job and the release's job id).
 *
 * No validation beyond what the statements need and no audit: it is the floor, not a product.
 * Prints `listening <url>` on stdout.
 */
import { createHash } from 'node:crypto';
import Fastify from 'fastify';
import pg from 'pg';
import { v7 as uuidv7 } from 'uuid';

const level = process.env.LOG_LEVEL ?? 'info';
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const app = Fastify({ logger: level === 'silent' ? false : { level } });

interface User {
  id: string;
  is_admin: boolean;
}
const CACHE_MS = 5_000;
const credentials = new Map<string, { user: User; until: number }>();

const KEY = {
  name: 'hw_key',
  text: `select u.id, u.is_admin from api_keys k join users u on u.id = k.user_id
         where k.token_hash = $1 and (k.expires_at is null or k.expires_at > now())`,
};

async function authenticate(key: unknown): Promise<User | null> {
  if (typeof key !== 'string') return null;
  const cached = credentials.get(key);
  if (cached && cached.until > Date.now()) return cached.user;
  const user = (await pool.query<User>({ ...KEY, values: [createHash('sha256').update(key).digest('hex')] })).rows[0];
  if (!user) return null;
  credentials.set(key, { user, until: Date.now() + CACHE_MS });
  return user;
}

const DETAIL = {
  name: 'hw_detail',
  text: `
  select a.*, o.slug as organization_slug, p.slug as project_slug, m.user_id as member_id,
    (select row_to_json(i) from (select id, version, built, error, created_at from images
       where application_id = a.id order by version desc limit 1) i) as latest_image,
    (select row_to_json(r) from (select id, version, built, error, created_at from releases
       where application_id = a.id order by version desc limit 1) r) as latest_release,
    (select row_to_json(d) from (select id, complete, error, created_at from deployments
       where application_id = a.id order by id desc limit 1) d) as latest_deployment
  from organizations o
  join projects p on p.organization_id = o.id and p.slug = $2
  join applications a on a.project_id = p.id and a.slug = $3
  left join memberships m on m.organization_id = o.id and m.user_id = $4
  where o.slug = $1`,
};

// The application with the caller's membership: the check every per-application route makes first.
const ACCESS = `
  select a.id, m.user_id as member_id, coalesce(m.admin, false) as org_admin, p.organization_id, o.created_by,
    exists (select 1 from environments e where e.project_id = a.project_id and e.protected) as protected
  from applications a join projects p on p.id = a.project_id join organizations o on o.id = p.organization_id
  left join memberships m on m.organization_id = p.organization_id and m.user_id = $2
  where a.id = $1`;

const CONFIG_LIST = {
  name: 'hw_config_list',
  text: `
  with access as (${ACCESS})
  select (select row_to_json(access) from access) as access,
    coalesce((select json_agg(v order by v.name) from (
      select id, name, case when secret then '**secret**' else value end as value, secret, buildtime, previews,
             created_at as created, updated_at as updated
      from config_vars where scope = 'application' and scope_id = $1) v), '[]') as variables`,
};

interface Access {
  id: string;
  member_id: string | null;
  org_admin: boolean;
  organization_id: string;
  created_by: string | null;
  protected: boolean;
}

const unauthenticated = { status: 401, message: 'Authentication required' };
const notFound = { status: 404, message: 'Application not found' };

app.get<{ Params: { org: string; project: string; app: string } }>('/v1/applications/:org/:project/:app', async (request, reply) => {
  const user = await authenticate(request.headers['x-api-key']);
  if (!user) return reply.code(401).send(unauthenticated);
  const { org, project, app: slug } = request.params;
  const row = (await pool.query({ ...DETAIL, values: [org, project, slug, user.id] })).rows[0];
  if (!row || (!row.member_id && !user.is_admin)) return reply.code(404).send(notFound);
  return row;
});

app.get<{ Params: { id: string } }>('/v1/configurations/:id', async (request, reply) => {
  const user = await authenticate(request.headers['x-api-key']);
  if (!user) return reply.code(401).send(unauthenticated);
  const row = (await pool.query({ ...CONFIG_LIST, values: [request.params.id, user.id] })).rows[0];
  const access = row?.access as Access | null;
  if (!access || (!access.member_id && !user.is_admin)) return reply.code(404).send(notFound);
  return row.variables;
});

/** Runs `work` in one transaction on one pooled connection. */
async function inTransaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('begin');
    const result = await work(client);
    await client.query('commit');
    return result;
  } catch (err) {
    await client.query('rollback').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

const ACCESS_STATEMENT = { name: 'hw_access', text: ACCESS };

async function writableApplication(client: pg.PoolClient, applicationId: string, user: User): Promise<Access | null> {
  const access = (await client.query<Access>({ ...ACCESS_STATEMENT, values: [applicationId, user.id] })).rows[0];
  if (!access || (!access.member_id && !user.is_admin)) return null;
  // A scope a protected environment inherits takes writes from organization admins only (as Slipway's write guard).
  if (access.protected && !access.org_admin && !user.is_admin) return null;
  return access;
}

const SCOPE_SIZE = {
  name: 'hw_scope_size',
  text: `select count(*)::int as variables from config_vars where scope = 'application' and scope_id = $1 and not (lower(name) = any($2))`,
};
const UPSERT = {
  name: 'hw_upsert',
  text: `
  insert into config_vars (id, scope, scope_id, name, value, secret, buildtime, previews)
  select id, 'application', $1, name, value, false, false, false from unnest($2::uuid[], $3::text[], $4::text[]) as v(id, name, value)
  on conflict (scope, scope_id, lower(name)) do update
    set value = excluded.value, value_sealed = null, secret = false, buildtime = false, previews = false, updated_at = now()
    where not config_vars.secret
  returning name, (xmax = 0) as inserted`,
};
const MAX_VARIABLES = 1000;

app.post<{ Params: { id: string }; Body: { variables: Record<string, string> } }>('/v1/configurations/:id/bulk', async (request, reply) => {
  const user = await authenticate(request.headers['x-api-key']);
  if (!user) return reply.code(401).send(unauthenticated);
  const entries = Object.entries(request.body.variables ?? {});
  const names = entries.map(([name]) => name);
  const result = await inTransaction(async (client) => {
    if (!(await writableApplication(client, request.params.id, user))) return null;
    const lower = names.map((n) => n.toLowerCase());
    const { variables } = (await client.query({ ...SCOPE_SIZE, values: [request.params.id, lower] })).rows[0];
    if (variables + entries.length > MAX_VARIABLES) return 'full' as const;
    const { rows } = await client.query<{ name: string; inserted: boolean }>({
      ...UPSERT,
      values: [request.params.id, entries.map(() => uuidv7()), names, entries.map(([, value]) => value)],
    });
    return rows;
  });
  if (result === null) return reply.code(404).send(notFound);
  if (result === 'full') return reply.code(422).send({ status: 422, message: 'too many variables' });
  const written = new Set(result.map((r) => r.name));
  return {
    created: result.filter((r) => r.inserted).map((r) => r.name),
    updated: result.filter((r) => !r.inserted).map((r) => r.name),
    skipped: names.filter((n) => !written.has(n)),
    errors: [],
  };
});

const PRODUCTION = {
  name: 'hw_production',
  text: `select e.id, e.protected from environments e join applications a on a.project_id = e.project_id
         where a.id = $1 and e.env_type = 'production' order by e.slug = 'production' desc, e.created_at limit 1`,
};
const QUEUED = {
  name: 'hw_queued',
  text: `select count(*) filter (where organization_id = $1)::int as organization, count(*)::int as site
         from pipeline_jobs where state in ('created', 'active')`,
};
const LOCK = { name: 'hw_lock', text: `select id, platform from applications where id = $1 for update` };
const INSERT_RELEASE = {
  name: 'hw_insert_release',
  text: `
  insert into releases (id, application_id, environment_id, version, platform, status, build_step, log_text)
  select $1, $2, $3, coalesce(max(version), 0) + 1, $4, 'building', $5, 'Queued\n' from releases where application_id = $2
  returning id, version`,
};
const INSERT_JOB = {
  name: 'hw_insert_job',
  text: `insert into pipeline_jobs (kind, application_id, organization_id, owner_id, data) values ('release', $1, $2, $3, $4) returning id`,
};
const SET_JOB = { name: 'hw_set_job', text: `update releases set job_id = $2, updated_at = now() where id = $1` };
const BUILD_STEP = JSON.stringify({ steps: ['Resolve', 'Build', 'Export', 'Push', 'Done'], current: 0 });
// Slipway's defaults raised by the bench (PIPELINE_*_QUEUE_LIMIT), so neither side refuses under load.
const ORG_QUEUE_LIMIT = 100_000;

app.post<{ Params: { id: string } }>('/v1/releases/:id/create', async (request, reply) => {
  const user = await authenticate(request.headers['x-api-key']);
  if (!user) return reply.code(401).send(unauthenticated);
  const applicationId = request.params.id;
  const result = await inTransaction(async (client) => {
    const access = (await client.query<Access>({ ...ACCESS_STATEMENT, values: [applicationId, user.id] })).rows[0];
    if (!access || (!access.member_id && !user.is_admin)) return null;
    const environment = (await client.query({ ...PRODUCTION, values: [applicationId] })).rows[0];
    if (!environment || (environment.protected && !access.org_admin && !user.is_admin)) return null;
    const queued = (await client.query({ ...QUEUED, values: [access.organization_id] })).rows[0];
    if (queued.organization >= ORG_QUEUE_LIMIT) return 'busy' as const;
    const { platform } = (await client.query({ ...LOCK, values: [applicationId] })).rows[0];
    const release = (await client.query({ ...INSERT_RELEASE, values: [uuidv7(), applicationId, environment.id, platform, BUILD_STEP] }))
      .rows[0];
    const data = {
      kind: 'release',
      applicationId,
      environmentId: environment.id,
      recordId: release.id,
      organizationId: access.organization_id,
      ownerId: access.created_by ?? access.organization_id,
    };
    const job = (await client.query({ ...INSERT_JOB, values: [applicationId, data.organizationId, data.ownerId, JSON.stringify(data)] }))
      .rows[0];
    await client.query({ ...SET_JOB, values: [release.id, job.id] });
    return { ok: true, release_id: release.id, version: release.version };
  });
  if (result === null) return reply.code(404).send(notFound);
  if (result === 'busy') return reply.code(429).send({ status: 429, message: 'too many jobs' });
  return reply.code(202).send(result);
});

const url = await app.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`listening ${url}\n`);
process.on('SIGTERM', () => void app.close().then(() => pool.end().then(() => process.exit(0))));
