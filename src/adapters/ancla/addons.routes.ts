import { Type } from 'typebox';
import type { FastifyReply } from 'fastify';
import { AppError } from '../../platform/errors.js';
import { commonErrorResponses } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import type { AddonsService } from '../../modules/addons/index.js';
import type { OrganizationScope } from '../../modules/organizations/index.js';
import { EnvServiceParams } from './services.schemas.js';

const SERVICE = '/workspaces/:workspace/projects/:project/envs/:env/services/:service';

/** Fields every answer shares: which add-on it is and why no password or URL comes with it. */
const AddonFields = {
  engine: Type.String({ description: '`redis` or `postgres`' }),
  host: Type.String({ description: "127.0.0.1: the add-on listens on the server's loopback, reached from the service's own instances" }),
  port: Type.Integer(),
  addon: Type.String({ description: 'the add-on’s name (`slipway addons show NAME`)' }),
  variable: Type.String({ description: 'the variable that gives the service its URL' }),
  status: Type.String(),
  message: Type.String({ description: 'how to reach it: no password or URL is ever answered' }),
};

const AnclaCache = Type.Object(AddonFields, { $id: 'AnclaCache' });
const AnclaDatabase = Type.Object(
  { ...AddonFields, name: Type.String({ description: 'the database' }), user: Type.String({ description: "the service's user" }) },
  { $id: 'AnclaDatabase' },
);
const AnclaCacheFlushed = Type.Object({ addon: Type.String(), flushed: Type.Boolean() }, { $id: 'AnclaCacheFlushed' });

/**
 * `.../services/{svc}/cache`, `cache/flush` and `database` (Ancla's CLI: `cache info|cli|flush`,
 * `dbshell`): the Redis and Postgres add-ons attached to the service in the environment. No
 * password and no URL: the clients get what the shape allows without a secret, with a message
 * (and a Warning header) naming the commands that reach the add-on (docs/api-decisions.md).
 */
export function addonsRoutes(deps: { scope: OrganizationScope; addons: AddonsService }) {
  const { scope, addons } = deps;
  const tags = ['Services'];

  async function attached(
    userId: string,
    p: { workspace: string; project: string; env: string; service: string },
    kind: 'redis' | 'postgres',
  ) {
    const { environment, project } = await scope.environment(userId, p.workspace, p.project, p.env);
    const application = await scope.application(project.id, p.service);
    const found = await addons.attachedConnection(application.id, environment.id, kind);
    if (!found)
      throw new AppError(
        'NOT_FOUND',
        `No ${kind === 'redis' ? 'cache' : 'database'}: no ${kind} add-on attached to '${p.service}' in ${p.env} (slipway addons attach)`,
      );
    return found;
  }

  /** `slipway run` in one of the service's instances (the variable expands there, not in the caller's shell). */
  const runIn = (p: { workspace: string; project: string; env: string; service: string }) =>
    `slipway -a ${p.workspace}/${p.project}/${p.service} -e ${p.env} run`;
  const warn = (reply: FastifyReply, message: string) => reply.header('warning', `299 - "${message.replace(/["\\]/g, '')}"`);

  return async (app: App) => {
    app.get(
      `${SERVICE}/cache`,
      {
        schema: {
          tags,
          summary: 'The Redis add-on attached to the service in this environment (no password)',
          params: EnvServiceParams,
          response: { 200: AnclaCache, ...commonErrorResponses },
        },
      },
      async (request, reply) => {
        const p = request.params;
        const a = await attached(currentUser(request).id, p, 'redis');
        const message =
          `The password is not given out: the service's instances have it in ${a.variable}. ` +
          `Use it from there: ${runIn(p)} -- sh -c 'redis-cli -u $${a.variable}'. Flush with ancla cache flush.`;
        warn(reply, message);
        return { engine: 'redis', host: a.host, port: a.port, addon: a.addon, variable: a.variable, status: a.status, message };
      },
    );

    app.post(
      `${SERVICE}/cache/flush`,
      {
        schema: {
          tags,
          summary: "Empties the service's Redis add-on, through the platform's own connection (the organization's admins)",
          params: EnvServiceParams,
          response: { 200: AnclaCacheFlushed, ...commonErrorResponses },
        },
      },
      async (request) => {
        const userId = currentUser(request).id;
        const a = await attached(userId, request.params, 'redis');
        return addons.flush(userId, request.params.workspace, a.addon);
      },
    );

    app.get(
      `${SERVICE}/database`,
      {
        schema: {
          tags,
          summary: 'The Postgres add-on attached to the service in this environment (no password)',
          params: EnvServiceParams,
          response: { 200: AnclaDatabase, ...commonErrorResponses },
        },
      },
      async (request, reply) => {
        const p = request.params;
        const a = await attached(currentUser(request).id, p, 'postgres');
        const message =
          `The password is not given out: the service's instances have it in ${a.variable}. ` +
          `Run SQL with slipway addons psql ${a.addon} (organization admins), or from an instance: ` +
          `${runIn(p)} -- sh -c 'psql $${a.variable}'.`;
        warn(reply, message);
        return {
          engine: 'postgres',
          host: a.host,
          port: a.port,
          name: a.database ?? '',
          user: a.user,
          addon: a.addon,
          variable: a.variable,
          status: a.status,
          message,
        };
      },
    );
  };
}
