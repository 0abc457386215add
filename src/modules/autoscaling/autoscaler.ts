import { v7 as uuidv7 } from 'uuid';
import type { Db } from '../../platform/db/database.js';
import type { Jobs } from '../../platform/jobs/index.js';
import type { AppUsage, RuntimeLogger } from '../../platform/runtime/application-runtime.js';
import { podClassOf } from '../applications/index.js';
import { effectiveProcessSettings } from '../environments/index.js';
import { findProductionEnvironmentId } from '../../platform/environments/index.js';
import { RECONCILE_JOB } from '../../platform/jobs/index.js';
import { AutoscalingRepository, type PolicyRow } from './autoscaling.repository.js';
import { decideScale, type Measurement } from './scaling-decision.js';

/** Process types a release runs without instances (they never scale). */
const ONE_OFF_TYPES = new Set(['release', 'postdeploy']);

/**
 * Evaluates the autoscaling policies of the application environments a sample covered,
 * right after the metrics sampler stored them (so once per sampling interval): the sampler
 * hands a sample only to the worker that stored it, so with several workers sampling the same
 * pods (a cluster) one evaluates; a claim in the database guards each policy as well.
 * A change sets the process count, records a scale event and queues a `reconcile` (the same
 * path as `POST /applications/{id}/scale`), so it never races a deployment.
 */
export class Autoscaler {
  private readonly repo: AutoscalingRepository;

  constructor(
    private readonly db: Db,
    repo: AutoscalingRepository,
    private readonly jobs: Pick<Jobs, 'enqueue'> | undefined,
    private readonly intervalSeconds: number,
    private readonly logger: RuntimeLogger,
  ) {
    this.repo = repo;
  }

  /** Evaluates the policies of the sampled application environments; `sampledAt` is the sample's time. */
  async evaluate(usage: AppUsage[], sampledAt = new Date()): Promise<number> {
    const policies = await this.repo.forEnvironments(usage);
    let changes = 0;
    for (const policy of policies) {
      const sample = usage.find((u) => u.applicationId === policy.application_id && u.environmentId === policy.environment_id)!;
      try {
        if (await this.evaluateOne(policy, sample, sampledAt)) changes++;
      } catch (err) {
        this.logger.error({ err, applicationId: policy.application_id, processType: policy.process_type }, 'autoscaling failed');
      }
    }
    return changes;
  }

  private async evaluateOne(before: PolicyRow, sample: AppUsage, sampledAt: Date): Promise<boolean> {
    const policy = await this.repo.claim(before.id, sampledAt, this.intervalSeconds);
    if (!policy) return false;
    const processes = await this.repo.servingProcesses(policy.application_id, policy.environment_id);
    if (!processes || !(policy.process_type in processes) || ONE_OFF_TYPES.has(policy.process_type)) return false;
    const settings = await effectiveProcessSettings(this.db, policy.application_id, policy.environment_id);
    const current = settings.process_counts[policy.process_type] ?? (policy.process_type === 'web' ? 1 : 0);
    const running = sample.processes?.[policy.process_type] ?? { cpuMillicores: 0, podCount: 0 };

    let measurement: Measurement;
    if (policy.target_cpu_percent !== null) {
      const request = podClassOf(settings.process_pod_classes, policy.process_type).cpu_request_m;
      // No reading (no running instance, or no metrics-server): no decision but keeping within min/max.
      const perInstance =
        running.podCount > 0 && running.cpuMillicores !== null ? (running.cpuMillicores / running.podCount / request) * 100 : null;
      measurement = { kind: 'cpu_percent', target: policy.target_cpu_percent, perInstance };
    } else {
      const rate = await this.requestRate(before, policy);
      // Per instance asked for, not per instance started: instances still starting after a scale-up must not scale further.
      const perInstance = rate === null ? null : rate / Math.max(1, current);
      measurement = { kind: 'requests_per_second', target: policy.target_rps!, perInstance };
    }

    const decision = decideScale(policy, current, measurement, policy.db_now);
    if (!decision) return false;
    const isProduction = (await findProductionEnvironmentId(this.db, policy.application_id)) === policy.environment_id;
    await this.repo.applyCount(policy, isProduction, {
      id: uuidv7(),
      from: current,
      to: decision.to,
      reason: decision.reason,
      metric: { [measurement.kind]: measurement.perInstance, target: measurement.target, running: running.podCount },
    });
    this.logger.info(
      { applicationId: policy.application_id, processType: policy.process_type, from: current, to: decision.to, reason: decision.reason },
      'autoscaled',
    );
    await this.jobs?.enqueue(RECONCILE_JOB, { applicationId: policy.application_id, environmentId: policy.environment_id });
    return true;
  }

  /**
   * Requests per second the edge counted since the previous evaluation: the growth of the
   * per-minute counters from the minute the previous evaluation started counting at.
   * Null on the first evaluation (nothing to compare with yet).
   */
  private async requestRate(before: PolicyRow, claimed: PolicyRow): Promise<number | null> {
    const now = claimed.evaluated_at!;
    let rate: number | null = null;
    if (before.evaluated_at && before.requests_minute && before.requests_seen !== null) {
      const total = await this.repo.requestsSince(
        claimed.application_id,
        claimed.environment_id,
        claimed.process_type,
        before.requests_minute,
      );
      const seconds = (now.getTime() - before.evaluated_at.getTime()) / 1000;
      if (seconds > 0) rate = Math.max(0, total - Number(before.requests_seen)) / seconds;
    }
    const minute = new Date(Math.floor(now.getTime() / 60_000) * 60_000);
    const seen = await this.repo.requestsSince(claimed.application_id, claimed.environment_id, claimed.process_type, minute);
    await this.repo.rememberRequests(claimed.id, minute, seen);
    return rate;
  }
}
