import { Type } from 'typebox';
import { commonErrorResponses, Ok } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import {
  AccessSettings,
  AddMemberBody,
  CreateOrganizationBody,
  MemberParams,
  OrganizationDetail,
  OrganizationSummary,
  OrgSlugParams,
  SetRoleBody,
} from './organizations.schemas.js';
import { OrganizationsService } from './organizations.service.js';

export function organizationsRoutes(orgs: OrganizationsService) {
  const tags = ['Organizations'];
  return async (app: App) => {
    app.get(
      '/organizations',
      {
        schema: {
          tags,
          summary: "The caller's organizations",
          response: { 200: Type.Array(OrganizationSummary), ...commonErrorResponses },
        },
      },
      async (request) => orgs.list(currentUser(request).id),
    );

    app.get(
      '/organizations/:org_slug',
      {
        schema: {
          tags,
          summary: 'An organization with its members',
          params: OrgSlugParams,
          response: { 200: OrganizationDetail, ...commonErrorResponses },
        },
      },
      async (request) => orgs.detail(currentUser(request).id, request.params.org_slug),
    );

    app.post(
      '/organizations',
      {
        schema: {
          tags,
          summary: 'Create an organization (the caller becomes its admin)',
          body: CreateOrganizationBody,
          response: { 201: OrganizationDetail, ...commonErrorResponses },
        },
      },
      async (request, reply) => reply.code(201).send(await orgs.create(currentUser(request), request.body)),
    );

    app.post(
      '/organizations/:org_slug/members',
      {
        schema: {
          tags,
          summary: 'Add a member with a role (admins; owners to add an owner)',
          params: OrgSlugParams,
          body: AddMemberBody,
          response: { 200: OrganizationDetail, ...commonErrorResponses },
        },
      },
      async (request) => orgs.addMember(currentUser(request).id, request.params.org_slug, request.body),
    );

    app.post(
      '/organizations/:org_slug/members/:user_id/toggle-admin',
      {
        schema: {
          tags,
          summary: "Flip a member's admin flag (admins)",
          params: MemberParams,
          response: { 200: Type.Object({ ok: Type.Boolean(), admin: Type.Boolean() }), ...commonErrorResponses },
        },
      },
      async (request) => orgs.toggleAdmin(currentUser(request).id, request.params.org_slug, request.params.user_id),
    );

    app.delete(
      '/organizations/:org_slug/members/:user_id',
      {
        schema: {
          tags,
          summary: 'Remove a member (admins, or a member leaving)',
          params: MemberParams,
          response: { 200: Ok, ...commonErrorResponses },
        },
      },
      async (request) => orgs.removeMember(currentUser(request).id, request.params.org_slug, request.params.user_id),
    );

    app.put(
      '/organizations/:org_slug/members/:user_id/role',
      {
        schema: {
          tags,
          summary: "Set a member's role (admins, below owner; owners for owners)",
          params: MemberParams,
          body: SetRoleBody,
          response: { 200: OrganizationDetail, ...commonErrorResponses },
        },
      },
      async (request) => orgs.setRole(currentUser(request).id, request.params.org_slug, request.params.user_id, request.body.role),
    );

    app.put(
      '/organizations/:org_slug/access-settings',
      {
        schema: {
          tags,
          summary: "Set the organization's access settings (owners)",
          params: OrgSlugParams,
          body: AccessSettings,
          response: { 200: AccessSettings, ...commonErrorResponses },
        },
      },
      async (request) => orgs.setAccessSettings(currentUser(request).id, request.params.org_slug, request.body),
    );
  };
}
