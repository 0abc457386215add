import { useState } from 'preact/hooks';
import { api, ApiError, ok } from '../../api.js';
import { ConfirmAction } from '../../components/confirm.js';
import { Loading, when } from '../../components/ui.js';
import { useLoad } from '../../hooks.js';
import { type ProjectEnvironment, useEnvironments } from './environments-list.js';
import type { SectionProps } from './types.js';

/**
 * The application's environments: which are protected and who may act there, maintenance mode
 * (on: the edge answers every request with a 503 page) behind a confirmation, and each one's
 * guard (the thresholds that roll a deployment back; its decisions are in Deployments).
 */
export function ProtectionSection({ app, org, project }: SectionProps) {
  const environments = useEnvironments(org, project);
  const grants = useLoad(() => ok(api.GET('/v1/organizations/{org_slug}/grants', { params: { path: { org_slug: org } } })), [org]);
  return (
    <section class="panel" aria-labelledby="environments-h">
      <h2 id="environments-h" data-page-title>
        Environments
      </h2>
      <Loading state={environments} what="environments" empty="The project has no environments.">
        {(list) => (
          <ul class="plain environments">
            {list.map((e) => (
              <li key={e.id} class="environment-card" data-environment={e.slug}>
                <h3>
                  {e.name} <span class={`env${e.env_type === 'production' ? ' production' : ''}`}>{e.env_type}</span>{' '}
                  {e.protected ? (
                    <span class="status status-busy" data-testid={`protected-${e.slug}`}>
                      protected
                    </span>
                  ) : (
                    <span class="muted">not protected</span>
                  )}
                </h3>
                <p data-testid={`who-${e.slug}`}>
                  <strong>Who may act: </strong>
                  {e.protected
                    ? whoMayAct((grants.data ?? []).filter((g) => g.project === project && g.environment === e.slug).map((g) => g.username))
                    : 'every member whose role deploys there (deployers, developers, admins and owners).'}
                </p>
                <Maintenance org={org} project={project} environment={e} />
                <Guard applicationId={app.id} environment={e.slug} />
              </li>
            ))}
          </ul>
        )}
      </Loading>
    </section>
  );
}

const whoMayAct = (granted: string[]) =>
  `organization admins${granted.length > 0 ? `, and ${granted.join(', ')} (granted)` : ' only (no member is granted it)'}.`;

function Maintenance({ org, project, environment: e }: { org: string; project: string; environment: ProjectEnvironment }) {
  const path = { params: { path: { workspace: org, project, env: e.slug } } };
  const state = useLoad(
    () => ok(api.GET('/v1/workspaces/{workspace}/projects/{project}/envs/{env}/maintenance', path)),
    [org, project, e.slug],
  );
  const [message, setMessage] = useState('');
  return (
    <Loading state={state} what="maintenance mode">
      {(m) => (
        <div class="maintenance" data-testid={`maintenance-${e.slug}`}>
          <p>
            <strong>Maintenance mode: </strong>
            {m.enabled ? (
              <>
                <span class="status status-error">on</span> since {when(m.enabled_at)} by {m.enabled_by ?? 'someone'}
                {m.message ? `: “${m.message}”` : ''}
              </>
            ) : (
              <span class="status status-ok">off</span>
            )}
          </p>
          {!m.enabled && (
            <label>
              Maintenance message for {e.slug} (optional)
              <input value={message} maxLength={2000} onInput={(ev) => setMessage((ev.currentTarget as HTMLInputElement).value)} />
            </label>
          )}
          <ConfirmAction
            label={m.enabled ? 'End maintenance' : 'Start maintenance'}
            ariaLabel={`${m.enabled ? 'End' : 'Start'} maintenance of ${e.slug}`}
            danger={!m.enabled}
            title={`${m.enabled ? 'End' : 'Start'} maintenance of ${e.slug}`}
            environment={e.slug}
            changes={[
              m.enabled
                ? { label: 'Requests', from: 'a 503 maintenance page', to: 'served by the application again' }
                : { label: 'Requests', from: 'served by the application', to: 'a 503 maintenance page (Retry-After 300 s)' },
            ]}
            note={e.protected ? `${e.slug} is protected: only organization admins and members granted it may do this.` : undefined}
            run={() =>
              ok(
                api.PUT('/v1/workspaces/{workspace}/projects/{project}/envs/{env}/maintenance', {
                  ...path,
                  body: m.enabled ? { enabled: false } : { enabled: true, ...(message.trim() ? { message: message.trim() } : {}) },
                }),
              )
            }
            done={m.enabled ? 'Maintenance ended.' : 'Maintenance started.'}
            onDone={state.reload}
          />
        </div>
      )}
    </Loading>
  );
}

/** The environment's guard, or that it has none (a 404 from the API is "none", not an error). */
function Guard({ applicationId, environment }: { applicationId: string; environment: string }) {
  const guard = useLoad(
    () =>
      ok(
        api.GET('/v1/applications/{application_id}/guard', {
          params: { path: { application_id: applicationId }, query: { environment } },
        }),
      ).catch((e: unknown) => {
        if (e instanceof ApiError && e.status === 404) return null;
        throw e;
      }),
    [applicationId, environment],
  );
  return (
    <Loading state={guard} what="the guard">
      {(g) => (
        <p data-testid={`guard-${environment}`}>
          <strong>Guard: </strong>
          {g === null
            ? 'none: a deployment that misbehaves stays until someone rolls it back.'
            : `watches ${g.window_seconds} s after each deployment; rolls back past ${[
                g.max_error_ratio !== null ? `${(g.max_error_ratio * 100).toFixed(1)}% errors` : null,
                g.max_p95_factor !== null ? `${g.max_p95_factor}× p95 latency` : null,
                g.max_restarts !== null ? `${g.max_restarts} restarts` : null,
              ]
                .filter(Boolean)
                .join(' or ')} (judged after ${g.min_requests} requests). Its decisions are in Deployments.`}
        </p>
      )}
    </Loading>
  );
}
