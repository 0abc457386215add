import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { commonErrorResponses } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { acceptWebSocket, requireWebSocketUpgrade, routeWebSocketUpgrades } from '../../platform/http/websocket.js';
import { ApplicationIdParams } from '../applications/index.js';
import { currentUser } from '../auth/index.js';
import { EXEC_MAX_MESSAGE, pipeExec } from './exec-stream.js';
import { ExecInstanceParams, ExecOpenBody, ExecOpened, ExecSessionParams, ExecStreamQuery } from './exec.schemas.js';
import type { InstanceExecService } from './exec.service.js';

/** The WebSocket paths (also under the `/api/v1` alias and with a trailing slash). */
const STREAM_PATH = /^\/(api\/)?v1\/exec-sessions\/[^/]+\/stream\/?$/;

/** `slipway exec`: open a session on an instance (audited), then attach it over a WebSocket. */
export function execRoutes(exec: InstanceExecService) {
  const tags = ['Instances'];
  return async (app: App) => {
    routeWebSocketUpgrades(app, STREAM_PATH);
    const open = {
      tags,
      summary:
        'Open a command (or a shell) inside a running instance: checks access, records and audits it; then attach it once, within a minute, with a WebSocket to `stream_path`',
      body: ExecOpenBody,
      response: { 201: ExecOpened, ...commonErrorResponses },
    };
    app.post(
      '/applications/:application_id/instances/:instance/exec',
      { schema: { ...open, params: ExecInstanceParams } },
      async (request, reply) =>
        reply
          .code(201)
          .send(await exec.open(currentUser(request).id, request.params.application_id, request.params.instance, request.body)),
    );
    app.post(
      '/applications/:application_id/exec',
      {
        schema: { ...open, summary: `${open.summary} (the environment's first running instance, web first)`, params: ApplicationIdParams },
      },
      async (request, reply) =>
        reply.code(201).send(await exec.open(currentUser(request).id, request.params.application_id, null, request.body)),
    );

    app.get(
      '/exec-sessions/:session_id/stream',
      {
        schema: {
          tags,
          summary:
            'WebSocket (upgrade only): runs the opened session. Binary frames: type byte then bytes (client: 0 stdin, 4 end of stdin; server: 1 stdout, 2 stderr); text: `{"type":"resize","rows","cols"}` in, `{"type":"exit","exit_code","signal"}` out, last',
          params: ExecSessionParams,
          querystring: ExecStreamQuery,
          response: { 101: Type.Null({ description: 'Switching Protocols: the WebSocket carries the session' }), ...commonErrorResponses },
        },
      },
      async (
        request: FastifyRequest<{ Params: { session_id: string }; Querystring: { rows?: number; cols?: number; term?: string } }>,
        reply: FastifyReply,
      ) => {
        const { rows, cols, term } = request.query;
        await exec.authorizeAttach(currentUser(request).id, request.params.session_id);
        requireWebSocketUpgrade(request);
        const attached = await exec.attach(currentUser(request).id, request.params.session_id, {
          rows: rows ?? 24,
          cols: cols ?? 80,
          term: term ?? 'xterm-256color',
        });
        let ws;
        try {
          ws = await acceptWebSocket(request, reply, EXEC_MAX_MESSAGE);
        } catch (err) {
          attached.process.kill();
          await attached.finish(null);
          throw err;
        }
        const status = await pipeExec(ws, attached.process);
        await attached.finish(status.exitCode);
        request.log.info({ exec_session: attached.session.id, exit_code: status.exitCode }, 'exec session ended');
      },
    );
  };
}
