import { useState } from 'preact/hooks';
import { importDotenvAsEntries, type ImportOutcome } from '../../../src/modules/configurations/dotenv-import.js';
import { api, errorText, ok, send } from '../api.js';
import { ConfirmAction } from '../components/confirm.js';
import { ErrorMessage, Loading } from '../components/ui.js';
import { useLoad } from '../hooks.js';

export interface BulkResult {
  created: string[];
  updated: string[];
  skipped: string[];
  errors: { name: string; message?: string }[];
}

/** A variable as the API answers it (a secret's value masked). */
type Variable = { id: string; name: string; value: string; secret: boolean; buildtime: boolean };
type NewVariable = { name: string; value: string; secret: boolean; buildtime: boolean };

/** What the panel needs from one configuration scope's routes. */
export interface ConfigEndpoints {
  /** Names the scope: the panel reloads when it changes. */
  key: string;
  list(): Promise<Variable[]>;
  create(body: NewVariable): Promise<unknown>;
  update(id: string, value: string): Promise<unknown>;
  remove(id: string): Promise<unknown>;
  importEnv(raw: string, secret: boolean): Promise<BulkResult>;
}

/** An application's variables: `/v1/configurations/{application_id}`. */
export function applicationConfig(applicationId: string): ConfigEndpoints {
  const path = { params: { path: { application_id: applicationId } } };
  const item = (config_id: string) => ({ params: { path: { application_id: applicationId, config_id } } });
  return {
    key: `application:${applicationId}`,
    list: () => ok(api.GET('/v1/configurations/{application_id}', path)),
    create: (body) => ok(api.POST('/v1/configurations/{application_id}', { ...path, body })),
    update: (id, value) => ok(api.PATCH('/v1/configurations/{application_id}/{config_id}', { ...item(id), body: { value } })),
    remove: (id) => ok(api.DELETE('/v1/configurations/{application_id}/{config_id}', item(id))),
    importEnv: (raw, secret) => ok(api.POST('/v1/configurations/{application_id}/bulk', { ...path, body: { raw, secret } })),
  };
}

/**
 * A workspace-group scope's variables (organization, team, project, environment): the same
 * routes under `prefix` (e.g. `/v1/workspaces/acme/teams/core`). A `.env` file is parsed here
 * and sent as the bulk route's array of entries; lines it cannot read are reported, not sent.
 */
export function scopedConfig(prefix: string): ConfigEndpoints {
  const base = `${prefix}/config`;
  return {
    key: prefix,
    list: () => send<Variable[]>('GET', base),
    create: (body) => send('POST', base, body),
    update: (id, value) => send('PATCH', `${base}/${id}`, { value }),
    remove: (id) => send('DELETE', `${base}/${id}`),
    importEnv: async (raw, secret) => {
      const outcomes = await importDotenvAsEntries(raw, { secret }, (entries) => send<ImportOutcome[]>('POST', `${base}/bulk`, entries));
      const named = (result: ImportOutcome['result']) => outcomes.filter((o) => o.result === result).map((o) => o.name);
      return {
        created: named('created'),
        updated: named('updated'),
        skipped: named('skipped'),
        errors: outcomes.filter((o) => o.result === 'error').map((o) => ({ name: o.name, message: o.message ?? undefined })),
      };
    },
  };
}

/**
 * The variables of one configuration scope. Secret values never reach the browser: the API
 * answers them masked, and editing a secret only ever sends a new value.
 */
export function ConfigurationPanel({ endpoints }: { endpoints: ConfigEndpoints }) {
  const vars = useLoad(() => endpoints.list(), [endpoints.key]);
  const [error, setError] = useState<string | null>(null);
  const [bulk, setBulk] = useState<BulkResult | null>(null);
  const [editing, setEditing] = useState<string | null>(null);

  const run = async (work: () => Promise<unknown>, form?: HTMLFormElement) => {
    try {
      await work();
      form?.reset();
      setError(null);
      vars.reload();
      return true;
    } catch (e) {
      setError(errorText(e));
      return false;
    }
  };
  return (
    <>
      <ErrorMessage message={error} />
      <section class="panel" aria-labelledby="vars-h">
        <h2 id="vars-h">Variables</h2>
        <Loading state={vars} empty="No variables yet.">
          {(list) => (
            <table class="config">
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Value</th>
                  <th>Flags</th>
                  <th>
                    <span class="sr-only">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {list.map((v) => (
                  <tr key={v.id} data-variable={v.name}>
                    <td>
                      <code>{v.name}</code>
                    </td>
                    <td class="value">
                      {editing === v.id ? (
                        <form
                          class="inline"
                          aria-label={`Edit ${v.name}`}
                          onSubmit={async (e) => {
                            e.preventDefault();
                            const value = String(new FormData(e.currentTarget as HTMLFormElement).get('value'));
                            if (await run(() => endpoints.update(v.id, value))) setEditing(null);
                          }}
                        >
                          {v.secret ? (
                            <input name="value" aria-label={`New value of ${v.name}`} type="password" autocomplete="off" autofocus />
                          ) : (
                            <input
                              name="value"
                              aria-label={`New value of ${v.name}`}
                              type="text"
                              value={v.value}
                              autocomplete="off"
                              autofocus
                            />
                          )}
                          <button type="submit">Save</button>
                          <button type="button" onClick={() => setEditing(null)}>
                            Cancel
                          </button>
                        </form>
                      ) : v.secret ? (
                        <span class="masked">•••••• (secret)</span>
                      ) : (
                        <code class="wrap">{v.value}</code>
                      )}
                    </td>
                    <td>
                      {v.secret && <span class="status">secret</span>} {v.buildtime && <span class="status">build time</span>}
                    </td>
                    <td class="actions">
                      <button type="button" onClick={() => setEditing(v.id)}>
                        Edit
                      </button>
                      <ConfirmAction
                        label="Delete"
                        ariaLabel={`Delete ${v.name}`}
                        danger
                        title={`Delete the variable ${v.name}`}
                        changes={[{ label: v.name, from: v.secret ? 'set (secret)' : v.value, to: 'deleted' }]}
                        note="Applications that inherit it keep it until their next release."
                        run={() => endpoints.remove(v.id)}
                        done="Deleted."
                        onDone={vars.reload}
                      />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </Loading>
      </section>

      <section class="panel" aria-labelledby="add-h">
        <h2 id="add-h">Add a variable</h2>
        <form
          aria-label="Add a variable"
          onSubmit={(e) => {
            e.preventDefault();
            const form = e.currentTarget as HTMLFormElement;
            const data = new FormData(form);
            void run(
              () =>
                endpoints.create({
                  name: String(data.get('name')),
                  value: String(data.get('value')),
                  secret: data.has('secret'),
                  buildtime: data.has('buildtime'),
                }),
              form,
            );
          }}
        >
          <label>
            Name
            <input name="name" required autocomplete="off" />
          </label>
          <label>
            Value
            <input name="value" autocomplete="off" />
          </label>
          <label class="check">
            <input type="checkbox" name="secret" /> Secret (write-only)
          </label>
          <label class="check">
            <input type="checkbox" name="buildtime" /> Available at build time
          </label>
          <button type="submit">Add variable</button>
        </form>
      </section>

      <section class="panel" aria-labelledby="import-h">
        <h2 id="import-h">Import a .env file</h2>
        <form
          aria-label="Import .env"
          onSubmit={(e) => {
            e.preventDefault();
            const form = e.currentTarget as HTMLFormElement;
            const data = new FormData(form);
            void run(async () => {
              setBulk(await endpoints.importEnv(String(data.get('raw')), data.has('secret')));
            }, form);
          }}
        >
          <label>
            Contents
            <textarea name="raw" rows={6} required spellcheck={false} placeholder={'NAME=value\nexport OTHER="quoted value"'} />
          </label>
          <label class="check">
            <input type="checkbox" name="secret" /> Import every variable as a secret
          </label>
          <button type="submit">Import</button>
        </form>
        {bulk && (
          <div role="status" class="bulk">
            <p>
              Created {bulk.created.length}, updated {bulk.updated.length}, skipped {bulk.skipped.length}, errors {bulk.errors.length}.
            </p>
            {bulk.skipped.length > 0 && <p class="muted">Skipped (already set): {bulk.skipped.join(', ')}</p>}
            {bulk.errors.length > 0 && (
              <ul class="error">
                {bulk.errors.map((e) => (
                  <li key={e.name}>
                    {e.name}: {e.message}
                  </li>
                ))}
              </ul>
            )}
          </div>
        )}
      </section>
    </>
  );
}
