import { useState } from 'preact/hooks';
import { api, errorText, ok } from '../api.js';
import { ConfirmAction } from '../components/confirm.js';
import { ErrorMessage, Loading, when } from '../components/ui.js';
import { useLoad } from '../hooks.js';
import { SshKeysPanel } from './ssh-keys.js';

const ACTIONS = ['read', 'deploy', 'config:write', 'scale', 'run', 'manage'] as const;
type Action = (typeof ACTIONS)[number];

/** A key's limits in words: "org/project, deploy and read", or everything its user can do. */
const scopeText = (
  scope: {
    organization: string | null;
    project: string | null;
    application: string | null;
    environment: string | null;
    actions: string[] | null;
  } | null,
) =>
  !scope
    ? 'everything you can do'
    : [
        [scope.organization, scope.project, scope.application].filter(Boolean).join('/') || 'every organization',
        scope.environment && `(${scope.environment})`,
        scope.actions ? scope.actions.join(', ') : 'every action',
      ]
        .filter(Boolean)
        .join(' ');

/** The signed-in user's API keys (a new key is shown once, then only its prefix; optionally limited), SSH keys and sign-ins. */
export function AccountPage() {
  const keys = useLoad(() => ok(api.GET('/v1/auth/api-keys')), []);
  const [created, setCreated] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const run = async (work: () => Promise<unknown>) => {
    try {
      await work();
      setError(null);
      keys.reload();
    } catch (e) {
      setError(errorText(e));
    }
  };
  return (
    <>
      <h1>Account</h1>
      <h2>API keys</h2>
      <Loading state={keys} empty="No API keys.">
        {(list) => (
          <table>
            <thead>
              <tr>
                <th>Name</th>
                <th>Prefix</th>
                <th class="wide-only">Limited to</th>
                <th>Last used</th>
                <th>Expires</th>
                <th>
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.map((k) => (
                <tr key={k.id}>
                  <td>{k.name}</td>
                  <td>
                    <code>{k.prefix}…</code>
                  </td>
                  <td class="wide-only">{scopeText(k.scope)}</td>
                  <td>{when(k.last_used)}</td>
                  <td>{when(k.expires)}</td>
                  <td>
                    <ConfirmAction
                      label="Revoke"
                      ariaLabel={`Revoke key ${k.name}`}
                      danger
                      title={`Revoke API key ${k.name}`}
                      changes={[{ label: `Key ${k.prefix}…`, from: 'accepted', to: 'refused from now on, by every client using it' }]}
                      run={() => ok(api.DELETE('/v1/auth/api-keys/{id}', { params: { path: { id: k.id } } }))}
                      done="Revoked."
                      onDone={keys.reload}
                    />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Loading>
      <form
        class="inline"
        aria-label="New API key"
        onSubmit={(e) => {
          e.preventDefault();
          const form = e.currentTarget as HTMLFormElement;
          void run(async () => {
            const data = new FormData(form);
            const slug = (name: string) => String(data.get(name) ?? '').trim() || undefined;
            const actions = data.getAll('actions').map(String) as Action[];
            const key = await ok(
              api.POST('/v1/auth/api-keys', {
                body: {
                  name: String(data.get('name')),
                  organization: slug('organization'),
                  project: slug('project'),
                  application: slug('application'),
                  environment: slug('environment'),
                  ...(actions.length > 0 ? { actions } : {}),
                },
              }),
            );
            setCreated(key.key);
            form.reset();
          });
        }}
      >
        <input name="name" required placeholder="Key name" aria-label="Key name" />
        <details>
          <summary>Limit it (optional)</summary>
          <input name="organization" placeholder="organization" aria-label="Only this organization (slug)" />
          <input name="project" placeholder="project" aria-label="Only this project (slug)" />
          <input name="application" placeholder="application" aria-label="Only this application (slug)" />
          <input name="environment" placeholder="environment" aria-label="Only this environment (slug)" />
          <fieldset class="events">
            <legend>Only these actions (none ticked: every action)</legend>
            {ACTIONS.map((a) => (
              <label key={a} class="check">
                <input type="checkbox" name="actions" value={a} />
                {a}
              </label>
            ))}
          </fieldset>
        </details>
        <button type="submit">Create key</button>
      </form>
      {created && (
        <p role="status">
          New key (shown once): <code class="wrap">{created}</code>
        </p>
      )}
      <ErrorMessage message={error} />
      <SshKeysPanel />
      <SessionsPanel />
    </>
  );
}

/** Where the user is signed in: each sign-in's method, address and last use; end any but this one. */
function SessionsPanel() {
  const sessions = useLoad(() => ok(api.GET('/v1/users/me/sessions')), []);
  return (
    <section aria-labelledby="sessions-h">
      <h2 id="sessions-h">Sign-ins</h2>
      <Loading state={sessions} what="sign-ins" empty="No sign-ins.">
        {(list) => (
          <div class="table-scroll">
            <table aria-label="Sign-ins">
              <thead>
                <tr>
                  <th>Method</th>
                  <th>Address</th>
                  <th class="wide-only">Browser</th>
                  <th>Last used</th>
                  <th>
                    <span class="sr-only">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {list.map((x) => (
                  <tr key={x.id}>
                    <td>{x.method}</td>
                    <td>{x.address ?? '—'}</td>
                    <td class="wide-only">{x.user_agent ?? '—'}</td>
                    <td>{when(x.last_used)}</td>
                    <td>
                      {x.current ? (
                        <span class="muted">this one</span>
                      ) : (
                        <ConfirmAction
                          class="compact"
                          label="Sign out"
                          ariaLabel={`Sign out ${x.method} from ${x.address ?? 'an unknown address'}`}
                          danger
                          title="End this sign-in"
                          changes={[{ label: `${x.method} from ${x.address ?? 'unknown'}`, from: 'signed in', to: 'signed out' }]}
                          run={() => ok(api.DELETE('/v1/users/me/sessions/{session_id}', { params: { path: { session_id: x.id } } }))}
                          done="Signed out."
                          onDone={sessions.reload}
                        />
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Loading>
    </section>
  );
}
