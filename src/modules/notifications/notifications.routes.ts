import { Type } from 'typebox';
import { commonErrorResponses, ErrorResponse, Ok } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import {
  ChannelParams,
  CreateChannelBody,
  NotificationChannel,
  NotificationDelivery,
  NotificationDeliveryList,
  NotificationDeliveryQuery,
  OrgParams,
} from './notifications.schemas.js';
import type { NotificationsService } from './notifications.service.js';

const BASE = '/organizations/:org_slug/notification-channels';

/** Slack, Discord and e-mail channels of an organization (its admins). */
export function notificationsRoutes(notifications: NotificationsService) {
  const tags = ['Notifications'];
  return async (app: App) => {
    app.post(
      BASE,
      {
        schema: {
          tags,
          summary: 'Send chosen platform events to a Slack or Discord incoming webhook (in that service’s message format), or by e-mail',
          description:
            'Slack gets Block Kit (a header, a section with app, environment, release and who, a button to the dashboard); ' +
            'Discord gets one embed (title, description, colour by outcome, fields, url); email (`url`: mailto:a@x,b@y) gets a ' +
            'text and an HTML part through the operator’s SMTP server. Deliveries are logged and ' +
            'retried with exponential backoff like webhooks’.',
          params: OrgParams,
          body: CreateChannelBody,
          response: { 201: NotificationChannel, ...commonErrorResponses },
        },
      },
      async (request, reply) =>
        reply.code(201).send(await notifications.create(currentUser(request).id, request.params.org_slug, request.body)),
    );

    app.get(
      BASE,
      {
        schema: {
          tags,
          summary: "The organization's notification channels",
          params: OrgParams,
          response: { 200: Type.Array(NotificationChannel), ...commonErrorResponses },
        },
      },
      async (request) => notifications.list(currentUser(request).id, request.params.org_slug),
    );

    app.get(
      `${BASE}/:channel_id`,
      {
        schema: {
          tags,
          summary: 'A notification channel',
          params: ChannelParams,
          response: { 200: NotificationChannel, ...commonErrorResponses },
        },
      },
      async (request) => notifications.get(currentUser(request).id, request.params.org_slug, request.params.channel_id),
    );

    app.delete(
      `${BASE}/:channel_id`,
      {
        schema: {
          tags,
          summary: 'Delete a notification channel (and its delivery log)',
          params: ChannelParams,
          response: { 200: Ok, ...commonErrorResponses },
        },
      },
      async (request) => {
        await notifications.delete(currentUser(request).id, request.params.org_slug, request.params.channel_id);
        return { ok: true };
      },
    );

    app.post(
      `${BASE}/:channel_id/test`,
      {
        schema: {
          tags,
          summary: 'Send a test message to the channel; answers 202 with its delivery, queued',
          params: ChannelParams,
          response: { 202: NotificationDelivery, ...commonErrorResponses, 503: ErrorResponse },
        },
      },
      async (request, reply) => {
        const user = currentUser(request);
        return reply.code(202).send(await notifications.test(user.id, user.username, request.params.org_slug, request.params.channel_id));
      },
    );

    app.get(
      `${BASE}/:channel_id/deliveries`,
      {
        schema: {
          tags,
          summary: "The channel's deliveries, newest first, each with every attempt's response status or error",
          params: ChannelParams,
          querystring: NotificationDeliveryQuery,
          response: { 200: NotificationDeliveryList, ...commonErrorResponses },
        },
      },
      async (request) =>
        notifications.deliveryLog(currentUser(request).id, request.params.org_slug, request.params.channel_id, request.query),
    );
  };
}
