import { Icon } from '../../components/icons.js';
import { duration, Status, when } from '../../components/ui.js';
import type { Deployment } from './types.js';

/**
 * What started a deployment, as far as the deployment record tells: a guard's automatic rollback
 * (another deployment's guard names it), a rollback, or a deploy (push, promotion or a click).
 */
export function trigger(d: Deployment, all: Deployment[]): string {
  if (all.some((o) => o.guard?.rollback_deployment_id === d.id)) return 'guard rollback';
  if (d.is_rollback) return 'rollback';
  return 'deploy';
}

const statusLabel = (d: Deployment) => (d.queue_reason ? 'queued' : d.status === 'rolled_back' ? 'rolled back by guard' : d.status);

/** Deployments newest first: release, environment, state, trigger, duration, start, and the way to its log. */
export function DeploymentTable({
  deployments,
  onLog,
  label,
}: {
  deployments: Deployment[];
  onLog: (d: Deployment) => void;
  label: string;
}) {
  return (
    <table class="deployments" aria-label={label}>
      <thead>
        <tr>
          <th>Release</th>
          <th class="wide-only">Environment</th>
          <th>Status</th>
          <th class="wide-only">Trigger</th>
          <th class="wide-only">Step</th>
          <th>Duration</th>
          <th class="wide-only">Started</th>
          <th>
            <span class="sr-only">Log</span>
          </th>
        </tr>
      </thead>
      <tbody>
        {deployments.flatMap((d) => [
          <tr key={d.id} data-deployment={d.id} class={d.error ? 'row-error' : d.complete ? undefined : 'row-busy'}>
            <td>
              v{d.release.version} {d.is_rollback && <span class="muted">(rollback)</span>}
              {/* On a phone the environment column gives way: the environment moves under the release. */}
              <span class={`env phone-only${d.environment === 'production' ? ' production' : ''}`}>{d.environment}</span>
            </td>
            <td class="wide-only" data-testid="environment">
              <span class={`env${d.environment === 'production' ? ' production' : ''}`}>{d.environment}</span>
            </td>
            <td>
              <Status error={d.error || d.status === 'rolled_back'} done={d.complete} label={statusLabel(d)} />
              {d.queue_reason && <p class="muted queue-reason">{d.queue_reason}</p>}
              {d.guard && <GuardDecision guard={d.guard} />}
            </td>
            <td class="wide-only" data-testid="trigger">
              {trigger(d, deployments)}
            </td>
            <td class="wide-only">
              {d.deploy_step
                ? `${Math.min(d.deploy_step.current + 1, d.deploy_step.steps.length)}/${d.deploy_step.steps.length} ${d.deploy_step.steps[d.deploy_step.current] ?? ''}`
                : '—'}
            </td>
            <td>{d.started ? duration(d.started, d.finished) : '—'}</td>
            <td class="wide-only">{when(d.created)}</td>
            <td>
              <button type="button" onClick={() => onLog(d)} aria-label={`Log of the deployment of v${d.release.version}`}>
                <Icon name="logs" />
                <span class="label">Log</span>
              </button>
            </td>
          </tr>,
          ...(d.error && (d.failure || d.error_detail)
            ? [
                <tr key={`${d.id}-failure`} class="failure-row">
                  <td colSpan={8}>
                    <FailureDetail deployment={d} />
                  </td>
                </tr>,
              ]
            : []),
        ])}
      </tbody>
    </table>
  );
}

/** Why a deployment failed: the structured `failure` (exit, health check, last lines, hint), else its error text. */
export function FailureDetail({ deployment: d }: { deployment: Deployment }) {
  const f = d.failure;
  if (!f) return <p class="failure">{d.error_detail}</p>;
  const what =
    f.reason === 'health_check_timeout'
      ? `${f.instance} never answered its health check`
      : f.reason === 'crashed_in_stability_window'
        ? `${f.instance} crashed ${f.seconds_after_healthy ?? '?'} s after it first answered`
        : `${f.instance} crashed during start`;
  return (
    <div class="failure" aria-label={`Why deployment of v${d.release.version} failed`}>
      <p>
        <strong>{what}</strong>
        {f.exit && <> ({f.exit.description})</>}
      </p>
      <dl class="facts">
        {f.health_check && (
          <>
            <dt>Health check</dt>
            <dd>
              {f.health_check.path} on port {f.health_check.port}: {f.health_check.result}
            </dd>
          </>
        )}
        {f.listening_ports && f.listening_ports.length > 0 && (
          <>
            <dt>Listening on</dt>
            <dd>{f.listening_ports.join(', ')}</dd>
          </>
        )}
        {f.hint && (
          <>
            <dt>Hint</dt>
            <dd>{f.hint}</dd>
          </>
        )}
      </dl>
      {f.output.length > 0 && (
        <>
          <p class="muted">Its last lines of output:</p>
          <pre class="failure-output">{f.output.join('\n')}</pre>
        </>
      )}
    </div>
  );
}

const GUARD_TEXT: Record<NonNullable<Deployment['guard']>['status'], string> = {
  watching: 'guard watching',
  passed: 'guard passed',
  rolled_back: 'guard rolled it back',
  breached: 'guard breached, nothing to go back to',
  superseded: 'guard stopped: a later deployment came',
};

/** What the deployment's guard decided (or is still watching), and the threshold it saw crossed. */
function GuardDecision({ guard }: { guard: NonNullable<Deployment['guard']> }) {
  const bad = guard.status === 'rolled_back' || guard.status === 'breached';
  return (
    <p class={`guard ${bad ? 'error' : 'muted'}`} data-testid="guard">
      {GUARD_TEXT[guard.status]}
      {guard.breach && `: ${guard.breach}`}
      {guard.status === 'watching' && ` until ${when(guard.watch_until)}`}
    </p>
  );
}
