import { useState } from 'preact/hooks';
import { api, ok } from '../api.js';
import { ConfirmAction } from '../components/confirm.js';
import { Loading, when } from '../components/ui.js';
import { useLoad } from '../hooks.js';

/**
 * An environment's maintenance mode, read when opened (the environments list does not carry it):
 * the current state, and turning it on (with the page's text, previewed in the confirmation) or off.
 */
export function MaintenanceToggle({ org, project, env }: { org: string; project: string; env: string }) {
  const [open, setOpen] = useState(false);
  return (
    <span class="maintenance">
      <button type="button" aria-expanded={open} aria-label={`Maintenance of ${env}`} onClick={() => setOpen(!open)}>
        Maintenance
      </button>
      {open && <MaintenanceState org={org} project={project} env={env} />}
    </span>
  );
}

function MaintenanceState({ org, project, env }: { org: string; project: string; env: string }) {
  const params = { params: { path: { workspace: org, project, env } } };
  const state = useLoad(
    () => ok(api.GET('/v1/workspaces/{workspace}/projects/{project}/envs/{env}/maintenance', params)),
    [org, project, env],
  );
  const [message, setMessage] = useState('');
  return (
    <Loading state={state} what="maintenance mode">
      {(m) =>
        m.enabled ? (
          <span>
            <span class="status status-busy">
              on since {when(m.enabled_at)}
              {m.enabled_by ? ` by ${m.enabled_by}` : ''}
            </span>{' '}
            <ConfirmAction
              class="compact"
              label="Turn off"
              ariaLabel={`Turn off maintenance of ${env}`}
              environment={env}
              title={`End maintenance of ${env}`}
              changes={[{ label: 'Requests', from: 'answered with the maintenance page (503)', to: 'served by the application' }]}
              run={() =>
                ok(api.PUT('/v1/workspaces/{workspace}/projects/{project}/envs/{env}/maintenance', { ...params, body: { enabled: false } }))
              }
              done="Maintenance ended."
              onDone={state.reload}
            />
          </span>
        ) : (
          <span>
            <label>
              Page text (optional)
              <input value={message} maxLength={1000} onInput={(e) => setMessage((e.currentTarget as HTMLInputElement).value)} />
            </label>{' '}
            <ConfirmAction
              class="compact"
              label="Turn on"
              ariaLabel={`Turn on maintenance of ${env}`}
              danger
              environment={env}
              title={`Put ${env} in maintenance`}
              changes={[
                { label: 'Requests', from: 'served by the application', to: 'answered with the maintenance page (503, Retry-After)' },
              ]}
              note={<>The page says: “{message.trim() || 'a short default naming the application'}”</>}
              run={() =>
                ok(
                  api.PUT('/v1/workspaces/{workspace}/projects/{project}/envs/{env}/maintenance', {
                    ...params,
                    body: { enabled: true, ...(message.trim() ? { message: message.trim() } : {}) },
                  }),
                )
              }
              done="Maintenance on."
              onDone={state.reload}
            />
          </span>
        )
      }
    </Loading>
  );
}
