import type { Readable } from 'node:stream';
import { Type } from 'typebox';
import { commonErrorResponses, IdParam } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import { PushRefused, type GitPushService } from './git-push.service.js';

const RECEIVE_PACK_REQUEST = 'application/x-git-receive-pack-request';

/**
 * Smart HTTP for `git push` (outside /v1: git speaks HTTP Basic, not X-API-Key):
 * `GET /git/{application id}.git/info/refs?service=git-receive-pack` and
 * `POST /git/{application id}.git/git-receive-pack`. A refusal is plain text, which git
 * prints as `remote: ...` before failing.
 */
export function gitPushRoutes(service: GitPushService) {
  return async (app: App) => {
    // The body is git's, spooled by the service itself (bounded by GIT_PUSH_MAX_BYTES, not BODY_LIMIT_BYTES).
    app.addContentTypeParser(RECEIVE_PACK_REQUEST, (_request, payload, done) => done(null, payload));
    const refuse = (
      reply: { code: (n: number) => unknown; header: (k: string, v: string) => unknown; type: (t: string) => unknown },
      err: PushRefused,
    ) => {
      reply.code(err.status);
      if (err.status === 401) reply.header('www-authenticate', 'Basic realm="Slipway", charset="UTF-8"');
      reply.type('text/plain; charset=utf-8');
      return `${err.message}\n`;
    };
    const Params = Type.Object({ repository: Type.String({ pattern: '\\.git$', maxLength: 64 }) });

    app.get(
      '/git/:repository/info/refs',
      {
        config: { public: true },
        schema: { hide: true, params: Params, querystring: Type.Object({ service: Type.Optional(Type.String()) }) },
      },
      async (request, reply) => {
        try {
          const refs = await service.advertise(request.headers.authorization, request.params.repository, request.query.service);
          reply.header('cache-control', 'no-cache').type(refs.contentType);
          return refs.body;
        } catch (err) {
          if (err instanceof PushRefused) return refuse(reply, err);
          throw err;
        }
      },
    );

    app.post(
      '/git/:repository/git-upload-pack',
      { config: { public: true }, schema: { hide: true, params: Params } },
      async (_request, reply) => refuse(reply, new PushRefused(403, 'This remote takes pushes only (git push)')),
    );

    app.post(
      '/git/:repository/git-receive-pack',
      { config: { public: true }, schema: { hide: true, params: Params } },
      async (request, reply) => {
        if (request.headers['content-type'] !== RECEIVE_PACK_REQUEST)
          return refuse(reply, new PushRefused(415, `Expected ${RECEIVE_PACK_REQUEST}`));
        let opened = false;
        try {
          await service.receive(
            request.headers.authorization,
            request.params.repository,
            {
              body: request.body as Readable,
              gzip: request.headers['content-encoding'] === 'gzip',
            },
            () => {
              opened = true;
              reply.hijack();
              reply.raw.writeHead(200, { 'content-type': 'application/x-git-receive-pack-result', 'cache-control': 'no-cache' });
              return {
                write: (chunk) => {
                  if (!reply.raw.destroyed) reply.raw.write(chunk);
                },
                end: () => reply.raw.end(),
                closed: () => reply.raw.destroyed,
              };
            },
          );
        } catch (err) {
          if (!opened && err instanceof PushRefused) return refuse(reply, err);
          if (!opened) throw err;
          request.log.error({ err }, 'git push failed after its answer began');
          if (!reply.raw.writableEnded) reply.raw.end();
        }
        return reply;
      },
    );
  };
}

const RemoteParams = Type.Object({ application_id: IdParam });
const Remote = Type.Object(
  {
    path: Type.String({ description: "the remote's path on this server: `git remote add slipway <server URL><path>`" }),
    allow_force_push: Type.Boolean({ description: 'whether a push that is not a fast-forward (or deletes a branch) is accepted' }),
  },
  { $id: 'GitRemote' },
);

/** `GET/PATCH /v1/applications/{id}/git-remote`: the application's git remote and its push rule. */
export function gitRemoteRoutes(service: GitPushService) {
  const tags = ['Applications'];
  return async (app: App) => {
    app.get(
      '/applications/:application_id/git-remote',
      {
        schema: {
          tags,
          summary: "The application's git remote on this server (`git push` deploys)",
          params: RemoteParams,
          response: { 200: Remote, ...commonErrorResponses },
        },
      },
      async (request) => service.remote(currentUser(request).id, request.params.application_id),
    );
    app.patch(
      '/applications/:application_id/git-remote',
      {
        schema: {
          tags,
          summary: 'Whether pushes to the git remote may rewrite branches (force push)',
          params: RemoteParams,
          body: Type.Object({ allow_force_push: Type.Boolean() }, { additionalProperties: false }),
          response: { 200: Remote, ...commonErrorResponses },
        },
      },
      async (request) => service.updateRemote(currentUser(request).id, request.params.application_id, request.body.allow_force_push),
    );
  };
}
