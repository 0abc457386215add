import { useState } from 'preact/hooks';
import { api, errorText, ok } from '../api.js';
import { ConfirmAction } from '../components/confirm.js';
import { FieldError, invalidProps, Loading, when } from '../components/ui.js';
import { useLoad } from '../hooks.js';

/**
 * The signed-in user's SSH public keys (`git push` over SSH): each key's name, OpenSSH SHA256
 * fingerprint and last use; add one by pasting a .pub file (a refusal is shown under the field,
 * with its request id), remove one after a confirmation.
 */
export function SshKeysPanel() {
  const keys = useLoad(() => ok(api.GET('/v1/users/me/ssh-keys')), []);
  const [refusal, setRefusal] = useState<string | undefined>(undefined);
  const [added, setAdded] = useState<string | null>(null);
  return (
    <section aria-labelledby="ssh-keys-h">
      <h2 id="ssh-keys-h">SSH keys</h2>
      <Loading state={keys} what="SSH keys" empty="No SSH keys: git push over SSH needs one.">
        {(list) => (
          <div class="table-scroll">
            <table aria-label="SSH keys">
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Fingerprint</th>
                  <th>Last used</th>
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
                      <code class="wrap">{k.fingerprint}</code>
                    </td>
                    <td>{when(k.last_used_at)}</td>
                    <td>
                      <ConfirmAction
                        class="compact"
                        label="Remove"
                        ariaLabel={`Remove SSH key ${k.name}`}
                        danger
                        title={`Remove SSH key ${k.name}`}
                        changes={[{ label: k.fingerprint, from: 'accepted by git push over SSH', to: 'refused from now on' }]}
                        run={() => ok(api.DELETE('/v1/users/me/ssh-keys/{key_id}', { params: { path: { key_id: k.id } } }))}
                        done="Removed."
                        onDone={keys.reload}
                      />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Loading>
      <form
        aria-label="New SSH key"
        onSubmit={async (e) => {
          e.preventDefault();
          const form = e.currentTarget as HTMLFormElement;
          const data = new FormData(form);
          const name = String(data.get('name') ?? '').trim();
          try {
            const key = await ok(
              api.POST('/v1/users/me/ssh-keys', {
                body: { public_key: String(data.get('public_key') ?? ''), ...(name ? { name } : {}) },
              }),
            );
            setRefusal(undefined);
            setAdded(`Added ${key.name} (${key.fingerprint}).`);
            form.reset();
            keys.reload();
          } catch (failure) {
            setAdded(null);
            setRefusal(errorText(failure));
          }
        }}
      >
        <label for="ssh-public-key">Public key (the contents of a .pub file)</label>
        <textarea
          id="ssh-public-key"
          name="public_key"
          rows={3}
          required
          placeholder="ssh-ed25519 AAAA… you@laptop"
          {...invalidProps('ssh-public-key', refusal)}
        />
        <FieldError name="ssh-public-key" message={refusal} />
        <div class="inline">
          <input name="name" placeholder="Name (default: the key's comment)" aria-label="SSH key name" maxLength={200} />
          <button type="submit">Add SSH key</button>
        </div>
      </form>
      {added && <p role="status">{added}</p>}
    </section>
  );
}
