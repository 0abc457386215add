import { Type } from 'typebox';
import type { AppContext } from '../../platform/context.js';
import { buildNodeVersions, serverChecks } from '../../platform/diagnostics/server-checks.js';
import { currentUser } from '../../platform/http/principal.js';
import { commonErrorResponses } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';

const ServerCheck = Type.Object({
  name: Type.String({ description: 'sandbox, cgroups, buildah, registry, edge or node' }),
  state: Type.Union([Type.Literal('ok'), Type.Literal('failed'), Type.Literal('absent')], {
    description: "absent: this server's configuration does not use it (e.g. RUNTIME_ISOLATION=none, no REGISTRY_URL)",
  }),
  summary: Type.String({ description: 'What works or what does not' }),
  fix: Type.Union([Type.String(), Type.Null()], { description: 'The next step for the administrator when it does not work' }),
  detail: Type.Union([Type.String(), Type.Null()], {
    description: 'What the machine answered (error text, paths, versions); null unless the caller is a site administrator',
  }),
});

const ServerDiagnosis = Type.Object(
  {
    checks: Type.Array(ServerCheck),
    node_versions: Type.Array(Type.String(), { description: 'Node versions source builds may use here (package.json "engines.node")' }),
  },
  { $id: 'ServerDiagnosis' },
);

/** `GET /v1/integrations/doctor`: whether this server can build, sandbox and serve, for `slipway doctor`. */
export function doctorRoutes(ctx: AppContext) {
  return async (app: App) => {
    app.get(
      '/integrations/doctor',
      {
        schema: {
          tags: ['Integrations'],
          summary: "The server's own checks (sandbox, cgroups, buildah, registry, edge, Node for builds), each with a fix",
          response: { 200: ServerDiagnosis, ...commonErrorResponses },
        },
      },
      async (request) => {
        // The machine's own answers (paths, kernel errors) are the administrator's; members get what and how to fix.
        const admin = currentUser(request).is_admin;
        const [checks, nodeVersions] = await Promise.all([serverChecks(ctx), buildNodeVersions(ctx)]);
        return { checks: checks.map((c) => ({ ...c, detail: admin ? c.detail : null })), node_versions: nodeVersions };
      },
    );
  };
}
