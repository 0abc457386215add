import type { Db } from '../../platform/db/database.js';
import type { PipelineJobs } from '../../platform/jobs/index.js';
import type { PlatformLogger } from '../../platform/wiring.js';
import { publishWebhookEvent } from '../../platform/webhook-events.js';
import { delta, nextState, slide, valueOf, type AlertState } from './alert-state.js';
import type { AlertRuleRow, AlertsRepository } from './alerts.repository.js';
import type { ThresholdWatch } from './threshold-watch.js';

export const ALERTS_QUEUE = 'alerts';

/** The counters are read from a whole minute this old at most, so each read scans a bounded stretch of minutes. */
const REANCHOR_MS = 3_600_000;

const minuteOf = (ms: number) => new Date(Math.floor(ms / 60_000) * 60_000);

/**
 * Judges every alert rule once per tick. Every process with workers asks for a tick each
 * interval; pg-boss keeps one `alerts` job per interval (a throttled send), and a rule is claimed
 * under a row lock by the one evaluation that finds it due, so two processes never judge it twice.
 */
export class AlertEvaluator {
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly db: Db,
    private readonly repo: AlertsRepository,
    private readonly jobs: PipelineJobs,
    private readonly intervalSeconds: number,
    private readonly log: PlatformLogger,
    /** Runs on the same tick: certificates near expiry, disk use near the quota. */
    private readonly thresholds: ThresholdWatch,
  ) {}

  async start(): Promise<void> {
    await this.jobs.addQueue(ALERTS_QUEUE, { retryLimit: 0, retryDelaySeconds: 1, concurrency: 1 }, async () => {
      await this.evaluateDue();
      await this.thresholds.check().catch((err) => this.log.warn({ err }, 'checking certificate and quota thresholds failed'));
    });
    const tick = () =>
      void this.jobs
        .sendThrottled(ALERTS_QUEUE, {}, this.intervalSeconds)
        .catch((err) => this.log.warn({ err }, 'queueing the alert evaluation failed'));
    tick();
    this.timer = setInterval(tick, this.intervalSeconds * 1000);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Evaluates the rules due (not judged within most of an interval); one rule's failure leaves the others. */
  async evaluateDue(): Promise<void> {
    const dueAfter = this.intervalSeconds * 0.8;
    for (const id of await this.repo.due(dueAfter)) {
      try {
        await this.db.transaction().execute(async (trx) => {
          const rule = await this.repo.claim(trx, id, dueAfter);
          if (rule) await this.evaluate(trx, rule);
        });
      } catch (err) {
        this.log.warn({ err, ruleId: id }, 'evaluating an alert rule failed');
      }
    }
  }

  private async evaluate(trx: Db, rule: AlertRuleRow): Promise<void> {
    const now = Date.now();
    const from = rule.counters_from ?? minuteOf(now);
    const counters = await this.repo.counters(trx, rule, from);
    // The first evaluation only takes the counters: what happened before the rule is not judged.
    const samples = rule.counters ? slide(rule.samples, delta(counters, rule.counters, now), rule.window_seconds) : [];
    const memoryPercent = rule.metric === 'memory_percent' ? await this.repo.memoryPercent(trx, rule) : null;
    const value = rule.counters ? valueOf(rule.metric, samples, rule.min_requests, memoryPercent) : null;
    const breached = value !== null && value > rule.threshold;
    const state = nextState(rule.state, rule.state_since, breached, rule.for_seconds, now);
    const reanchor = now - from.getTime() > REANCHOR_MS;
    const countersFrom = reanchor ? minuteOf(now) : from;
    await this.repo.saveEvaluation(trx, rule.id, {
      state,
      changed: state !== rule.state,
      value,
      countersFrom,
      counters: reanchor ? await this.repo.counters(trx, rule, countersFrom) : counters,
      samples,
    });
    if (state !== rule.state) await this.transition(trx, rule, state, value, now);
  }

  private async transition(trx: Db, rule: AlertRuleRow, to: AlertState, value: number | null, now: number) {
    const told = to === 'firing' || to === 'resolved';
    const silenced = rule.silenced_until !== null && rule.silenced_until.getTime() > now;
    await this.repo.recordTransition(trx, { ruleId: rule.id, from: rule.state, to, value, notified: told && !silenced });
    this.log.info({ ruleId: rule.id, rule: rule.name, from: rule.state, to, value, silenced }, 'alert rule changed state');
    if (!told || silenced) return;
    // In the evaluation's transaction: the outbox feeds webhooks and the notification channels.
    await publishWebhookEvent(trx, {
      organizationId: rule.organization_id,
      projectId: rule.project_id,
      event: to === 'firing' ? 'alert.firing' : 'alert.resolved',
      data: {
        rule_id: rule.id,
        rule: rule.name,
        metric: rule.metric,
        value,
        threshold: rule.threshold,
        window_seconds: rule.window_seconds,
        application_id: rule.application_id,
        environment_id: rule.environment_id,
        status: to,
        message: alertMessage(rule, to, value),
      },
    });
  }
}

export function alertMessage(
  rule: Pick<AlertRuleRow, 'name' | 'metric' | 'threshold' | 'window_seconds'>,
  to: AlertState,
  value: number | null,
) {
  const measured = value === null ? 'no data' : String(value);
  return to === 'firing'
    ? `Alert ${rule.name} is firing: ${rule.metric} ${measured} above ${rule.threshold} over ${rule.window_seconds}s`
    : `Alert ${rule.name} resolved: ${rule.metric} ${measured} (threshold ${rule.threshold})`;
}
