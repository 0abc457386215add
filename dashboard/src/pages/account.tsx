import { useState } from 'preact/hooks';
import { api, errorText, ok } from '../api.js';
import { ConfirmAction } from '../components/confirm.js';
import { ErrorMessage, Loading, when } from '../components/ui.js';
import { useLoad } from '../hooks.js';

/** The signed-in user's API keys: a new key is shown once, then only its prefix. */
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
      <h1>API keys</h1>
      <Loading state={keys} empty="No API keys.">
        {(list) => (
          <table>
            <thead>
              <tr>
                <th>Name</th>
                <th>Prefix</th>
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
            const key = await ok(api.POST('/v1/auth/api-keys', { body: { name: String(new FormData(form).get('name')) } }));
            setCreated(key.key);
            form.reset();
          });
        }}
      >
        <input name="name" required placeholder="Key name" aria-label="Key name" />
        <button type="submit">Create key</button>
      </form>
      {created && (
        <p role="status">
          New key (shown once): <code class="wrap">{created}</code>
        </p>
      )}
      <ErrorMessage message={error} />
    </>
  );
}
