/**
 * The hand-written baseline (issue 15): one Fastify route doing the reads an authenticated
 * application detail needs, written directly over `pg` (pool of 10, logger at LOG_LEVEL like
 * Slipway's): the API key by its SHA-256 joined to its user; the application with its
 * organization/project slugs and the caller's membership; the latest image, release and
 * deployment in one statement. Three queries, no framework of ours. It reads the same database
 * as the Slipway server under test (DATABASE_URL). Prints `listening <url>` on stdout.
 */
import { createHash } from 'node:crypto';
import Fastify from 'fastify';
import pg from 'pg';

const level = process.env.LOG_LEVEL ?? 'info';
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const app = Fastify({ logger: level === 'silent' ? false : { level } });

const KEY_SQL = `
  select u.id, u.username, u.email, u.is_admin
  from api_keys k join users u on u.id = k.user_id
  where k.token_hash = $1 and (k.expires_at is null or k.expires_at > now())`;

const APP_SQL = `
  select a.*, o.slug as organization_slug, p.slug as project_slug, m.user_id as member_id
  from organizations o
  join projects p on p.organization_id = o.id and p.slug = $2
  join applications a on a.project_id = p.id and a.slug = $3
  left join memberships m on m.organization_id = o.id and m.user_id = $4
  where o.slug = $1`;

const LATEST_SQL = `
  select
    (select row_to_json(i) from (select id, version, built, error, created_at from images
       where application_id = $1 order by version desc limit 1) i) as latest_image,
    (select row_to_json(r) from (select id, version, built, error, created_at from releases
       where application_id = $1 order by version desc limit 1) r) as latest_release,
    (select row_to_json(d) from (select id, complete, error, created_at from deployments
       where application_id = $1 order by created_at desc, id desc limit 1) d) as latest_deployment`;

app.get<{ Params: { org: string; project: string; app: string } }>('/v1/applications/:org/:project/:app', async (request, reply) => {
  const key = request.headers['x-api-key'];
  if (typeof key !== 'string') return reply.code(401).send({ status: 401, message: 'Authentication required' });
  const user = (await pool.query(KEY_SQL, [createHash('sha256').update(key).digest('hex')])).rows[0];
  if (!user) return reply.code(401).send({ status: 401, message: 'Authentication required' });
  const { org, project, app: slug } = request.params;
  const application = (await pool.query(APP_SQL, [org, project, slug, user.id])).rows[0];
  if (!application) return reply.code(404).send({ status: 404, message: 'Application not found' });
  if (!application.member_id && !user.is_admin) return reply.code(403).send({ status: 403, message: 'Not a member' });
  const latest = (await pool.query(LATEST_SQL, [application.id])).rows[0];
  return { ...application, ...latest };
});

const url = await app.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`listening ${url}\n`);
process.on('SIGTERM', () => void app.close().then(() => pool.end().then(() => process.exit(0))));
