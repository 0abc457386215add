import { Type } from 'typebox';
import { commonErrorResponses } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import { OrgSlugParams } from '../organizations/index.js';
import {
  Addon,
  AddonChange,
  AddonParams,
  AddonQueryBody,
  AddonQueryResult,
  AttachAddonBody,
  AttachmentParams,
  CreateAddonBody,
  ResizeAddonBody,
  SwapAddonBody,
} from './addons.schemas.js';
import type { AddonsService } from './addons.service.js';

const BASE = '/organizations/:org_slug/addons';

/** An organization's add-ons: Postgres and Redis servers attached to its application environments. */
export function addonsRoutes(addons: AddonsService) {
  const tags = ['Add-ons'];
  return async (app: App) => {
    app.get(
      BASE,
      {
        schema: {
          tags,
          summary: "The organization's add-ons (deleted ones within their grace period too)",
          params: OrgSlugParams,
          response: { 200: Type.Array(Addon), ...commonErrorResponses },
        },
      },
      async (request) => addons.list(currentUser(request).id, request.params.org_slug),
    );
    app.post(
      BASE,
      {
        schema: {
          tags,
          summary: 'Create an add-on (its own server, started before the answer); 409 on a name taken, 422 on an unknown plan',
          params: OrgSlugParams,
          body: CreateAddonBody,
          response: { 201: Addon, ...commonErrorResponses },
        },
      },
      async (request, reply) => reply.code(201).send(await addons.create(currentUser(request).id, request.params.org_slug, request.body)),
    );
    app.get(
      `${BASE}/:addon`,
      {
        schema: {
          tags,
          summary: 'An add-on: status, plan limits, attachments',
          params: AddonParams,
          response: { 200: Addon, ...commonErrorResponses },
        },
      },
      async (request) => addons.show(currentUser(request).id, request.params.org_slug, request.params.addon),
    );
    app.patch(
      `${BASE}/:addon`,
      {
        schema: {
          tags,
          summary: 'Resize: another plan (the server restarts with its limits)',
          params: AddonParams,
          body: ResizeAddonBody,
          response: { 200: Addon, ...commonErrorResponses },
        },
      },
      async (request) => addons.resize(currentUser(request).id, request.params.org_slug, request.params.addon, request.body.plan),
    );
    app.delete(
      `${BASE}/:addon`,
      {
        schema: {
          tags,
          summary: 'Delete: stopped now, data kept for ADDONS_DELETE_GRACE_HOURS (undelete meanwhile); 409 while attached',
          params: AddonParams,
          response: { 200: Addon, ...commonErrorResponses },
        },
      },
      async (request) => addons.remove(currentUser(request).id, request.params.org_slug, request.params.addon),
    );
    app.post(
      `${BASE}/:addon/undelete`,
      {
        schema: {
          tags,
          summary: 'Bring back a deleted add-on within its grace period',
          params: AddonParams,
          response: { 200: Addon, ...commonErrorResponses },
        },
      },
      async (request) => addons.undelete(currentUser(request).id, request.params.org_slug, request.params.addon),
    );
    app.post(
      `${BASE}/:addon/attachments`,
      {
        schema: {
          tags,
          summary: 'Attach to an application environment: its URL becomes a secret variable, in a new release where it serves',
          params: AddonParams,
          body: AttachAddonBody,
          response: { 201: AddonChange, ...commonErrorResponses },
        },
      },
      async (request, reply) =>
        reply.code(201).send(await addons.attach(currentUser(request).id, request.params.org_slug, request.params.addon, request.body)),
    );
    app.delete(
      `${BASE}/:addon/attachments/:attachment_id`,
      {
        schema: {
          tags,
          summary: 'Detach: the variable goes, in a new release where it serves',
          params: AttachmentParams,
          response: { 200: AddonChange, ...commonErrorResponses },
        },
      },
      async (request) =>
        addons.detach(currentUser(request).id, request.params.org_slug, request.params.addon, request.params.attachment_id),
    );
    app.post(
      `${BASE}/:addon/swap`,
      {
        schema: {
          tags,
          summary:
            "Move another add-on's attachment to this one (same variable; e.g. a restored fork), in a new release; needs confirm: true",
          params: AddonParams,
          body: SwapAddonBody,
          response: { 200: AddonChange, ...commonErrorResponses },
        },
      },
      async (request) => addons.swap(currentUser(request).id, request.params.org_slug, request.params.addon, request.body),
    );
    app.post(
      `${BASE}/:addon/rotate`,
      {
        schema: {
          tags,
          summary: 'New credentials for the attached applications, released to each',
          params: AddonParams,
          response: { 200: AddonChange, ...commonErrorResponses },
        },
      },
      async (request) => addons.rotate(currentUser(request).id, request.params.org_slug, request.params.addon),
    );
    app.post(
      `${BASE}/:addon/query`,
      {
        schema: {
          tags,
          summary: "Run SQL on a Postgres add-on as its applications' user (slipway addons psql); at most 1000 rows back",
          params: AddonParams,
          body: AddonQueryBody,
          response: { 200: AddonQueryResult, ...commonErrorResponses },
        },
      },
      async (request) => addons.query(currentUser(request).id, request.params.org_slug, request.params.addon, request.body.sql),
    );
  };
}
