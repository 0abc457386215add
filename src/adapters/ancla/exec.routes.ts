import { Type } from 'typebox';
import { conflict } from '../../platform/errors.js';
import { commonErrorResponses } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import type { InstanceExecService } from '../../modules/instance-exec/index.js';
import type { OrganizationScope } from '../../modules/organizations/index.js';
import { EnvServiceParams } from './services.schemas.js';

const SERVICE = '/workspaces/:workspace/projects/:project/envs/:env/services/:service';

const ExecBody = Type.Object({
  process: Type.Optional(Type.String({ pattern: '^[a-z0-9][a-z0-9_-]{0,62}$', description: 'Process type (default `web`)' })),
  command: Type.Optional(
    Type.String({
      maxLength: 8192,
      description: 'What `ancla shell` will run; what runs is the command the SSH client sends (none: a shell)',
    }),
  ),
});

const ExecConnection = Type.Object({
  host: Type.String({ description: 'Where the SSH gateway listens' }),
  port: Type.Integer(),
  token: Type.String({ description: 'Log in as `token:<token>`: attaches this session once, within `expires_in_seconds`' }),
  username: Type.String({ description: 'The whole SSH user name: `token:<token>`' }),
  websocket_url: Type.String({ description: "The same session through Slipway's exec WebSocket (`slipway exec`'s protocol)" }),
  session_id: Type.String({ format: 'uuid' }),
  instance: Type.String({ description: 'The instance entered, e.g. `web.1`' }),
  expires_in_seconds: Type.Integer(),
});

/**
 * Ancla's `ancla ssh` and `ancla shell`: `POST .../services/{svc}/exec` opens an exec session
 * (the checks of `slipway exec`) and answers where to reach the SSH gateway with a one-use token
 * that attaches it. The SSH client's channel then runs on the exec core (modules/ssh-gateway).
 */
export function execRoutes(deps: { exec: InstanceExecService; scope: OrganizationScope; ssh: { port: number; host: string } }) {
  const { exec, scope, ssh } = deps;
  return async (app: App) => {
    app.post(
      `${SERVICE}/exec`,
      {
        schema: {
          tags: ['Services'],
          summary:
            "Open a shell or a command in the service's first running instance of a process type: SSH connection details with a one-use token",
          params: EnvServiceParams,
          body: ExecBody,
          response: { 201: ExecConnection, ...commonErrorResponses },
        },
      },
      async (request, reply) => {
        const userId = currentUser(request).id;
        const p = request.params;
        const { project, environment } = await scope.environment(userId, p.workspace, p.project, p.env);
        const application = await scope.application(project.id, p.service);
        // Refusals of access first: whether the server has an SSH gateway is told only to those who may use it.
        await exec.authorizeOpen(userId, application.id, environment.id);
        if (!ssh.port) throw conflict('This server runs no SSH gateway (SSH_PORT): use `slipway exec` instead');
        const opened = await exec.openForSsh(
          userId,
          application.id,
          environment.id,
          request.body.process ?? 'web',
          request.body.command ?? null,
        );
        const host = ssh.host || request.hostname.replace(/:\d+$/, '').replace(/^\[(.*)\]$/, '$1');
        const ws = request.protocol === 'https' ? 'wss' : 'ws';
        return reply.code(201).send({
          host,
          port: ssh.port,
          token: opened.token,
          username: `token:${opened.token}`,
          websocket_url: `${ws}://${request.host}${opened.session.stream_path}`,
          session_id: opened.session.id,
          instance: opened.session.instance,
          expires_in_seconds: opened.session.attach_within_seconds,
        });
      },
    );
  };
}
