import { Type } from 'typebox';
import { commonErrorResponses, ErrorResponse, Ok, Slug, Timestamp } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser, requireSiteAdmin } from '../../platform/http/principal.js';
import type { GitHubInstallationsService } from './installations.service.js';

const InstallationId = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: "GitHub's installation id" });

const Installation = Type.Object(
  {
    installation_id: Type.Integer(),
    linked_via: Type.Union([Type.Literal('setup'), Type.Literal('admin')], {
      description: "`setup`: the App's setup flow by an organization admin; `admin`: a site administrator",
    }),
    linked_at: Timestamp,
    account: Type.Union([Type.String(), Type.Null()], { description: 'GitHub account it is installed on (from its hooks)' }),
    repository_selection: Type.Union([Type.String(), Type.Null()]),
  },
  { description: 'A GitHub App installation linked to the organization' },
);
const LinkedInstallation = Type.Object({ organization: Type.String(), ...Installation.properties }, { $id: 'LinkedInstallation' });
const SetupStarted = Type.Object({
  install_url: Type.String({ description: 'send the organization admin here to install the App' }),
  state: Type.String({ description: 'sealed: the organization, the user and an expiry (GitHub hands it back to the setup URL)' }),
  expires: Timestamp,
});
const SetupQuery = Type.Object({
  installation_id: InstallationId,
  state: Type.String({ minLength: 1, maxLength: 4096 }),
  code: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'user authorization code (OAuth during installation)' })),
  setup_action: Type.Optional(Type.String({ maxLength: 32 })),
});
const OrgParams = Type.Object({ org_slug: Slug });
const OrgInstallationParams = Type.Object({ org_slug: Slug, installation_id: InstallationId });
const InstallationParams = Type.Object({ installation_id: InstallationId });
const AdminLinkBody = Type.Object({ organization: Slug }, { additionalProperties: false });

/**
 * GitHub App installations of an organization: an application may name only these in
 * `github_app_installation_id` (docs/api-decisions.md, "GitHub App installations").
 */
export function githubInstallationsRoutes(installations: GitHubInstallationsService) {
  const tags = ['Integrations'];
  return async (app: App) => {
    app.get(
      '/organizations/:org_slug/github/installations',
      {
        schema: {
          tags,
          summary: 'The GitHub App installations linked to the organization (the only ones its applications may use)',
          params: OrgParams,
          response: { 200: Type.Array(Installation), ...commonErrorResponses },
        },
      },
      async (request) => installations.list(currentUser(request).id, request.params.org_slug),
    );

    app.post(
      '/organizations/:org_slug/github/installations/setup',
      {
        schema: {
          tags,
          summary: 'Start installing the GitHub App for the organization (admins): the install link, carrying a sealed state',
          params: OrgParams,
          response: { 200: SetupStarted, ...commonErrorResponses, 503: ErrorResponse },
        },
      },
      async (request) => installations.startSetup(currentUser(request).id, request.params.org_slug),
    );

    app.get(
      '/integrations/github/setup',
      {
        schema: {
          tags,
          summary:
            "The App's setup URL: GitHub redirects the installing admin here; links the installation once GitHub confirms this user reaches it",
          querystring: SetupQuery,
          response: { 200: LinkedInstallation, ...commonErrorResponses, 503: ErrorResponse },
        },
      },
      async (request) => installations.completeSetup(currentUser(request).id, request.query),
    );

    app.delete(
      '/organizations/:org_slug/github/installations/:installation_id',
      {
        schema: {
          tags,
          summary: 'Unlink an installation from the organization (admins); its applications can no longer use it',
          params: OrgInstallationParams,
          response: { 200: Ok, ...commonErrorResponses },
        },
      },
      async (request) => {
        await installations.unlink(currentUser(request).id, request.params.org_slug, request.params.installation_id);
        return { ok: true };
      },
    );

    app.put(
      '/github/installations/:installation_id',
      {
        schema: {
          tags,
          summary: 'Link an installation to an organization (site administrators; moves it from any other)',
          params: InstallationParams,
          body: AdminLinkBody,
          response: { 200: LinkedInstallation, ...commonErrorResponses },
        },
      },
      async (request) => installations.adminLink(requireSiteAdmin(request).id, request.params.installation_id, request.body.organization),
    );
  };
}
