import { Type } from 'typebox';
import { ErrorResponse } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import type { GithubHooksService } from './github-hooks.service.js';

const HookAccepted = Type.Object({ ok: Type.Boolean(), hook_id: Type.String() }, { $id: 'HookAccepted' });
/** GitHub's own limit for hook payloads. */
const MAX_HOOK_BYTES = 25 * 1024 * 1024;

export function githubRoutes(hooks: GithubHooksService) {
  return async (app: App) => {
    // The signature covers the exact bytes GitHub sent: keep the body raw (in this plugin only).
    app.removeAllContentTypeParsers();
    app.addContentTypeParser(
      ['application/json', 'application/x-www-form-urlencoded'],
      { parseAs: 'buffer', bodyLimit: MAX_HOOK_BYTES },
      (_req, body, done) => done(null, body),
    );

    app.post(
      '/integrations/github/hooks',
      {
        config: { public: true },
        bodyLimit: MAX_HOOK_BYTES,
        schema: {
          tags: ['Integrations'],
          summary: 'GitHub webhook: verified by X-Hub-Signature-256; a push to an auto-deploy branch builds, releases and deploys',
          response: { 200: HookAccepted, 400: ErrorResponse, 403: ErrorResponse, 413: ErrorResponse, 415: ErrorResponse },
        },
      },
      async (request) => {
        const header = (name: string) => {
          const v = request.headers[name];
          return Array.isArray(v) ? v[0] : v;
        };
        return hooks.receive({
          event: header('x-github-event'),
          deliveryId: header('x-github-delivery'),
          signature: header('x-hub-signature-256'),
          contentType: header('content-type'),
          body: Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0),
        });
      },
    );
  };
}
