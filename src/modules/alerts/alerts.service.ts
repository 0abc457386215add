import type { Static } from 'typebox';
import { v7 as uuidv7 } from 'uuid';
import { describeAuditedChange } from '../../platform/audit/request-audit.js';
import type { Db } from '../../platform/db/database.js';
import { conflict, invalid, notFound } from '../../platform/errors.js';
import { iso } from '../../platform/http/schemas.js';
import { chosenEnvironmentId } from '../../pipeline/index.js';
import type { RequireOrganizationAdmin } from '../webhooks/index.js';
import { applicationOfOrganization, type AlertRuleRow, type AlertsRepository } from './alerts.repository.js';
import type { AlertRule, AlertTransition, CreateAlertRuleBody } from './alerts.schemas.js';

export const DEFAULT_ALERT_WINDOW_SECONDS = 300;
export const DEFAULT_ALERT_MIN_REQUESTS = 20;
const HISTORY_LIMIT = 200;

const view = (r: AlertRuleRow): Static<typeof AlertRule> => ({
  id: r.id,
  name: r.name,
  metric: r.metric,
  threshold: r.threshold,
  window_seconds: r.window_seconds,
  for_seconds: r.for_seconds,
  min_requests: r.min_requests,
  pattern: r.pattern,
  ignore_case: r.ignore_case,
  application_id: r.application_id,
  application: r.application_slug,
  environment_id: r.environment_id,
  environment: r.environment_slug,
  state: r.state,
  state_since: iso(r.state_since),
  value: r.last_value,
  evaluated: r.evaluated_at ? iso(r.evaluated_at) : null,
  silenced_until: r.silenced_until && r.silenced_until.getTime() > Date.now() ? iso(r.silenced_until) : null,
  created: iso(r.created_at),
});

/** An organization's alert rules, managed by its admins (they decide what wakes whom). */
export class AlertsService {
  constructor(
    private readonly db: Db,
    private readonly repo: AlertsRepository,
    private readonly requireAdmin: RequireOrganizationAdmin,
  ) {}

  async create(userId: string, orgSlug: string, body: CreateAlertRuleBody) {
    const org = await this.requireAdmin(userId, orgSlug);
    if (body.environment && !body.application_id) throw invalid('environment', 'a rule scoped to an environment names its application_id');
    if (body.metric === 'error_rate' && body.threshold >= 1) throw invalid('threshold', 'an error rate is a share below 1 (0.05: 5%)');
    if (body.metric === 'memory_percent' && body.threshold >= 100)
      throw invalid('threshold', 'memory is a percent of the limit below 100 (90: 90% of the limit)');
    if (body.metric === 'log_matches') {
      if (!body.pattern) throw invalid('pattern', 'a log_matches rule names the substring it counts');
      if (!body.application_id) throw invalid('application_id', 'a log_matches rule counts one application’s lines');
    } else if (body.pattern !== undefined || body.ignore_case !== undefined) {
      throw invalid('pattern', 'only a log_matches rule takes a pattern');
    }
    let environmentId: string | null = null;
    if (body.application_id) {
      if (!(await applicationOfOrganization(this.db, org.id, body.application_id))) throw notFound('Application');
      if (body.environment) environmentId = await chosenEnvironmentId(this.db, body.application_id, body.environment);
    }
    const id = uuidv7();
    const values = {
      name: body.name,
      metric: body.metric,
      threshold: body.threshold,
      window_seconds: body.window_seconds ?? DEFAULT_ALERT_WINDOW_SECONDS,
      for_seconds: body.for_seconds ?? 0,
      min_requests: body.min_requests ?? DEFAULT_ALERT_MIN_REQUESTS,
      pattern: body.pattern ?? null,
      ignore_case: body.ignore_case ?? false,
      application_id: body.application_id ?? null,
      environment_id: environmentId,
    };
    describeAuditedChange({ organizationId: org.id, resourceType: 'alert_rules', resourceId: id, after: values });
    if (!(await this.repo.insert({ id, organization_id: org.id, created_by: userId, ...values })))
      throw conflict(`An alert rule named ${body.name} exists`);
    return view((await this.repo.find(org.id, id))!);
  }

  async list(userId: string, orgSlug: string) {
    const org = await this.requireAdmin(userId, orgSlug);
    return (await this.repo.list(org.id)).map(view);
  }

  private async find(userId: string, orgSlug: string, rule: string) {
    const org = await this.requireAdmin(userId, orgSlug);
    const row = await this.repo.find(org.id, rule);
    if (!row) throw notFound('Alert rule');
    return { org, row };
  }

  async get(userId: string, orgSlug: string, rule: string) {
    return view((await this.find(userId, orgSlug, rule)).row);
  }

  async delete(userId: string, orgSlug: string, rule: string) {
    const { org, row } = await this.find(userId, orgSlug, rule);
    describeAuditedChange({ organizationId: org.id, resourceType: 'alert_rules', resourceId: row.id, before: view(row), after: null });
    await this.repo.delete(row.id);
    return { ok: true };
  }

  /** No notification until `forSeconds` from now (transitions are still recorded); 0 lifts the silence. */
  async silence(userId: string, orgSlug: string, rule: string, forSeconds: number) {
    const { org, row } = await this.find(userId, orgSlug, rule);
    const until = forSeconds > 0 ? new Date(Date.now() + forSeconds * 1000) : null;
    describeAuditedChange({
      organizationId: org.id,
      resourceType: 'alert_rules',
      resourceId: row.id,
      before: { silenced_until: row.silenced_until ? iso(row.silenced_until) : null },
      after: { silenced_until: until ? iso(until) : null },
    });
    await this.repo.silence(row.id, until);
    return view((await this.repo.find(org.id, row.id))!);
  }

  async history(userId: string, orgSlug: string, rule: string): Promise<Array<Static<typeof AlertTransition>>> {
    const { row } = await this.find(userId, orgSlug, rule);
    return (await this.repo.history(row.id, HISTORY_LIMIT)).map((t) => ({
      from: t.from_state,
      to: t.to_state as Static<typeof AlertTransition>['to'],
      value: t.value,
      notified: t.notified,
      at: iso(t.at),
    }));
  }
}
