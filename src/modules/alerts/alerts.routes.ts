import { Type } from 'typebox';
import { commonErrorResponses } from '../../platform/http/schemas.js';
import { currentUser } from '../../platform/http/principal.js';
import type { App } from '../../platform/http/types.js';
import { AlertRule, AlertRuleParams, OrgParams, AlertTransition, CreateAlertRuleBody, SilenceBody } from './alerts.schemas.js';
import type { AlertsService } from './alerts.service.js';

const BASE = '/organizations/:org_slug/alert-rules';

/** Alert rules of an organization (its admins): thresholds over the platform's measures, sent to its channels. */
export function alertsRoutes(alerts: AlertsService) {
  const tags = ['Alerts'];
  return async (app: App) => {
    app.post(
      BASE,
      {
        schema: {
          tags,
          summary: 'Add an alert rule: a metric above a threshold over a window, for a while, fires',
          description:
            'Evaluated every ALERT_EVALUATION_SECONDS: ok → pending (breached) → firing (breached for `for_seconds`) → resolved. ' +
            'Firing and resolving are sent as `alert.firing` / `alert.resolved` to the webhooks and notification channels that take them. ' +
            'A rule scoped to an environment that fires while a guarded deployment there is watched rolls it back.',
          params: OrgParams,
          body: CreateAlertRuleBody,
          response: { 201: AlertRule, ...commonErrorResponses },
        },
      },
      async (request, reply) => reply.code(201).send(await alerts.create(currentUser(request).id, request.params.org_slug, request.body)),
    );
    app.get(
      BASE,
      {
        schema: {
          tags,
          summary: "The organization's alert rules and their states",
          params: OrgParams,
          response: { 200: Type.Array(AlertRule), ...commonErrorResponses },
        },
      },
      async (request) => alerts.list(currentUser(request).id, request.params.org_slug),
    );
    app.get(
      `${BASE}/:rule`,
      {
        schema: {
          tags,
          summary: 'An alert rule (by id or name)',
          params: AlertRuleParams,
          response: { 200: AlertRule, ...commonErrorResponses },
        },
      },
      async (request) => alerts.get(currentUser(request).id, request.params.org_slug, request.params.rule),
    );
    app.delete(
      `${BASE}/:rule`,
      {
        schema: {
          tags,
          summary: 'Delete an alert rule and its history',
          params: AlertRuleParams,
          response: { 200: Type.Object({ ok: Type.Boolean() }), ...commonErrorResponses },
        },
      },
      async (request) => alerts.delete(currentUser(request).id, request.params.org_slug, request.params.rule),
    );
    app.get(
      `${BASE}/:rule/history`,
      {
        schema: {
          tags,
          summary: "The rule's state changes, newest first (the last 200)",
          params: AlertRuleParams,
          response: { 200: Type.Array(AlertTransition), ...commonErrorResponses },
        },
      },
      async (request) => alerts.history(currentUser(request).id, request.params.org_slug, request.params.rule),
    );
    app.put(
      `${BASE}/:rule/silence`,
      {
        schema: {
          tags,
          summary: 'Silence a rule for a time: its transitions are recorded but nobody is notified',
          params: AlertRuleParams,
          body: SilenceBody,
          response: { 200: AlertRule, ...commonErrorResponses },
        },
      },
      async (request) => alerts.silence(currentUser(request).id, request.params.org_slug, request.params.rule, request.body.for_seconds),
    );
    app.delete(
      `${BASE}/:rule/silence`,
      { schema: { tags, summary: 'Lift a silence', params: AlertRuleParams, response: { 200: AlertRule, ...commonErrorResponses } } },
      async (request) => alerts.silence(currentUser(request).id, request.params.org_slug, request.params.rule, 0),
    );
  };
}
