/**
 * The autoscaler's arithmetic, free of I/O: how many instances a process type should run
 * for what it measured (as Kubernetes' HorizontalPodAutoscaler computes it:
 * ceil(total load / target per instance), within min/max, ignoring changes within 10%).
 */

export interface ScalingPolicy {
  min_count: number;
  max_count: number;
  cooldown_seconds: number;
  last_scaled_at: Date | null;
}

export interface Measurement {
  /** What the target is: `cpu_percent` (of the pod class's CPU request) or `requests_per_second` (per instance). */
  kind: 'cpu_percent' | 'requests_per_second';
  /** The target per instance, in the unit of `kind`. */
  target: number;
  /** The average per running instance, in the unit of `kind` (null: no reading yet). */
  perInstance: number | null;
}

export interface ScalingDecision {
  to: number;
  reason: string;
}

/** Load within this fraction of the target changes nothing (no flapping around it). */
const TOLERANCE = 0.1;

/** The change to make (null: none) for a process type running `current` instances. */
export function decideScale(policy: ScalingPolicy, current: number, m: Measurement, now: Date): ScalingDecision | null {
  if (current < policy.min_count) return { to: policy.min_count, reason: `below the minimum of ${policy.min_count}` };
  if (current > policy.max_count) return { to: policy.max_count, reason: `above the maximum of ${policy.max_count}` };
  if (m.perInstance === null || current === 0) return null;
  const ratio = m.perInstance / m.target;
  if (Math.abs(ratio - 1) <= TOLERANCE) return null;
  const wanted = Math.min(policy.max_count, Math.max(policy.min_count, Math.ceil(current * ratio)));
  if (wanted === current) return null;
  const measured = `${describe(m.kind, m.perInstance)} per instance against a target of ${describe(m.kind, m.target)}`;
  if (wanted > current) return { to: wanted, reason: `${measured}: scaled up` };
  const sinceLast = policy.last_scaled_at ? (now.getTime() - policy.last_scaled_at.getTime()) / 1000 : Infinity;
  if (sinceLast < policy.cooldown_seconds) return null;
  return { to: wanted, reason: `${measured} after the cooldown of ${policy.cooldown_seconds}s: scaled down` };
}

function describe(kind: Measurement['kind'], value: number): string {
  return kind === 'cpu_percent' ? `CPU ${Math.round(value)}%` : `${Math.round(value * 100) / 100} requests/s`;
}
