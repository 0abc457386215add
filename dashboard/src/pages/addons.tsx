import { useState } from 'preact/hooks';
import { api, errorText, ok, send, type Schemas } from '../api.js';
import { ConfirmAction } from '../components/confirm.js';
import { ErrorMessage, Loading, when } from '../components/ui.js';
import { useLoad } from '../hooks.js';

type Addon = Schemas['Addon'];
type Kind = Addon['kind'];

/** The plans of src/platform/addons/plans.ts, as offered when creating one. */
const PLANS: Record<Kind, string[]> = { postgres: ['hobby', 'standard'], redis: ['hobby', 'standard'] };
const STATUS_CLASS: Record<Addon['status'], string> = {
  running: 'status-ok',
  creating: 'status-busy',
  failed: 'status-error',
  stopped: 'status-busy',
  deleted: 'status-error',
};

/**
 * The organization's add-ons (Postgres, Redis): create with a plan, attach to an application's
 * environment and detach, backups and the last restore drill ("last proven restorable"),
 * restore into a fork, delete; every destructive action through the confirmation.
 */
export function AddonsSection({ org }: { org: string }) {
  const path = { params: { path: { org_slug: org } } };
  const addons = useLoad(() => ok(api.GET('/v1/organizations/{org_slug}/addons', path)), [org]);
  const [kind, setKind] = useState<Kind>('postgres');
  const [error, setError] = useState<string | null>(null);
  const create = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const data = new FormData(form);
    try {
      await ok(
        api.POST('/v1/organizations/{org_slug}/addons', {
          ...path,
          body: { name: String(data.get('name')).trim(), kind, plan: String(data.get('plan')) },
        }),
      );
      setError(null);
      form.reset();
      addons.reload();
    } catch (e) {
      setError(errorText(e));
    }
  };
  return (
    <>
      <section aria-labelledby="addons-h">
        <h2 id="addons-h">Add-ons</h2>
        <Loading state={addons} what="add-ons" empty="No add-ons yet: create a Postgres or Redis server below.">
          {(list) => (
            <ul class="cards">
              {list.map((a) => (
                <AddonCard key={a.id} org={org} addon={a} onChanged={addons.reload} />
              ))}
            </ul>
          )}
        </Loading>
      </section>
      <section aria-labelledby="new-addon-h">
        <h2 id="new-addon-h">New add-on</h2>
        <form class="inline" aria-labelledby="new-addon-h" onSubmit={create}>
          <label>
            Name
            <input name="name" required pattern="[a-z0-9][a-z0-9\-]*" placeholder="main-db" />
          </label>
          <label>
            Kind
            <select name="kind" value={kind} onChange={(e) => setKind((e.currentTarget as HTMLSelectElement).value as Kind)}>
              <option value="postgres">Postgres</option>
              <option value="redis">Redis</option>
            </select>
          </label>
          <label>
            Plan
            <select name="plan">
              {PLANS[kind].map((p) => (
                <option key={p} value={p}>
                  {p}
                </option>
              ))}
            </select>
          </label>
          <button type="submit">Create add-on</button>
        </form>
        <ErrorMessage message={error} />
      </section>
    </>
  );
}

function AddonCard({ org, addon: a, onChanged }: { org: string; addon: Addon; onChanged: () => void }) {
  const params = { params: { path: { org_slug: org, addon: a.name } } };
  const [open, setOpen] = useState(false);
  return (
    <li data-addon={a.name}>
      <p>
        <strong>{a.name}</strong> <span class="env">{a.kind}</span> <span class={`status ${STATUS_CLASS[a.status]}`}>{a.status}</span>{' '}
        <span class="muted">
          plan {a.plan}: {a.limits.memory_mib} MiB, {a.limits.connections} connections
        </span>
      </p>
      {a.status_detail && <p class="muted">{a.status_detail}</p>}
      <p class="muted">
        {a.kind === 'postgres' &&
          (a.last_proven_restorable_at
            ? `Last proven restorable ${when(a.last_proven_restorable_at)}`
            : 'Not yet proven restorable by a drill')}
        {a.restored_from && ` · a fork of ${a.restored_from}`}
      </p>
      <p>
        Attached to:{' '}
        {a.attachments.length === 0
          ? 'nothing'
          : a.attachments.map((t) => (
              <span key={t.id} class="attachment">
                {t.application} ({t.environment}) as <code>{t.variable}</code>{' '}
                <ConfirmAction
                  class="compact"
                  label="Detach"
                  ariaLabel={`Detach ${a.name} from ${t.application} ${t.environment}`}
                  danger
                  environment={t.environment}
                  title={`Detach ${a.name} from ${t.application}`}
                  changes={[{ label: t.variable, from: 'set', to: 'removed: a new release is deployed without it' }]}
                  run={() =>
                    ok(
                      api.DELETE('/v1/organizations/{org_slug}/addons/{addon}/attachments/{attachment_id}', {
                        params: { path: { org_slug: org, addon: a.name, attachment_id: t.id } },
                      }),
                    )
                  }
                  done="Detached."
                  onDone={onChanged}
                />{' '}
              </span>
            ))}
      </p>
      <div class="buttons">
        <button type="button" aria-expanded={open} onClick={() => setOpen(!open)}>
          {a.kind === 'postgres' ? 'Attach, backups and restore' : 'Attach'}
        </button>
        <ConfirmAction
          label="Delete"
          ariaLabel={`Delete add-on ${a.name}`}
          danger
          title={`Delete the add-on ${a.name}`}
          changes={[
            { label: 'Server', from: a.status, to: 'stopped; undeletable until it is purged' },
            ...a.attachments.map((t) => ({ label: `${t.application} (${t.environment})`, from: t.variable, to: 'removed' })),
          ]}
          run={() => ok(api.DELETE('/v1/organizations/{org_slug}/addons/{addon}', params))}
          done="Deleted."
          onDone={onChanged}
        />
      </div>
      {open && <Attach org={org} addon={a} onChanged={onChanged} />}
      {open && a.kind === 'postgres' && <Backups org={org} addon={a} onChanged={onChanged} />}
    </li>
  );
}

/** Attach to one of the organization's applications (listed by the overview's one read). */
function Attach({ org, addon, onChanged }: { org: string; addon: Addon; onChanged: () => void }) {
  const apps = useLoad(
    () =>
      send<{ applications: Array<{ id: string; name: string; project_slug: string }> }>(
        'GET',
        `/v1/overview?organization=${encodeURIComponent(org)}`,
      ),
    [org],
  );
  const [error, setError] = useState<string | null>(null);
  const attach = async (event: Event) => {
    event.preventDefault();
    const data = new FormData(event.currentTarget as HTMLFormElement);
    const as = String(data.get('as') ?? '').trim();
    try {
      await ok(
        api.POST('/v1/organizations/{org_slug}/addons/{addon}/attachments', {
          params: { path: { org_slug: org, addon: addon.name } },
          body: {
            application_id: String(data.get('application')),
            environment: String(data.get('environment')).trim() || undefined,
            ...(as ? { as } : {}),
          },
        }),
      );
      setError(null);
      onChanged();
    } catch (e) {
      setError(errorText(e));
    }
  };
  return (
    <Loading state={apps} what="applications">
      {({ applications }) =>
        applications.length === 0 ? (
          <p class="muted empty">No application to attach to yet.</p>
        ) : (
          <form class="inline" aria-label={`Attach ${addon.name}`} onSubmit={attach}>
            <label>
              Application
              <select name="application">
                {applications.map((x) => (
                  <option key={x.id} value={x.id}>
                    {x.project_slug} / {x.name}
                  </option>
                ))}
              </select>
            </label>
            <label>
              Environment
              <input name="environment" placeholder="production" />
            </label>
            <label>
              As variable
              <input name="as" placeholder={addon.kind === 'postgres' ? 'DATABASE_URL' : 'REDIS_URL'} />
            </label>
            <button type="submit">Attach</button>
            <ErrorMessage message={error} />
          </form>
        )
      }
    </Loading>
  );
}

function Backups({ org, addon, onChanged }: { org: string; addon: Addon; onChanged: () => void }) {
  const params = { params: { path: { org_slug: org, addon: addon.name } } };
  const backups = useLoad(() => ok(api.GET('/v1/organizations/{org_slug}/addons/{addon}/backups', params)), [org, addon.name]);
  const [fork, setFork] = useState(`${addon.name}-fork`);
  return (
    <Loading state={backups} what="backups">
      {(b) => (
        <div class="backups">
          <h3>Backups</h3>
          <p class="muted">
            {b.window
              ? `A restore reaches from ${when(b.window.earliest)} to ${b.window.latest ? when(b.window.latest) : 'the last archived change'}`
              : 'No backup yet'}{' '}
            · kept {b.retention_days} days ·{' '}
            {b.last_drill
              ? `last drill ${b.last_drill.ok ? 'passed' : `failed: ${b.last_drill.detail ?? ''}`} ${when(b.last_drill.at)}`
              : 'no restore drill yet'}
          </p>
          {b.last_drill?.check && (
            <p class="muted" data-drill-check>
              The drill's check <code>{b.last_drill.check.query}</code>{' '}
              {b.last_drill.check.rows === null
                ? 'failed'
                : `returned ${b.last_drill.check.rows} row${b.last_drill.check.rows === 1 ? '' : 's'}${
                    b.last_drill.check.first_value === null ? '' : `, first value “${b.last_drill.check.first_value}”`
                  }`}
            </p>
          )}
          <DrillCheck org={org} addon={addon} onChanged={onChanged} />
          <ConfirmAction
            label="Back up now"
            title={`Back up ${addon.name} now`}
            changes={[{ label: 'Backups', to: 'one more base backup' }]}
            run={() => ok(api.POST('/v1/organizations/{org_slug}/addons/{addon}/backups', params))}
            done="Backup started."
            onDone={backups.reload}
          />
          {b.backups.length === 0 ? (
            <p class="muted empty">No backups yet.</p>
          ) : (
            <div class="table-scroll">
              <table aria-label={`Backups of ${addon.name}`}>
                <thead>
                  <tr>
                    <th>Started</th>
                    <th>Status</th>
                    <th class="wide-only">Size</th>
                    <th class="wide-only">Kept in</th>
                    <th>
                      <span class="sr-only">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {b.backups.map((x) => (
                    <tr key={x.id}>
                      <td>{when(x.started)}</td>
                      <td>
                        {x.status} <span class="muted">{x.trigger}</span>
                      </td>
                      <td class="wide-only">{x.size_bytes === null ? '—' : `${Math.ceil(x.size_bytes / 1048576)} MiB`}</td>
                      <td class="wide-only">{x.location === 's3' ? 'S3' : 'local'}</td>
                      <td>
                        {x.status === 'completed' && (
                          <ConfirmAction
                            class="compact"
                            label="Restore into a fork"
                            ariaLabel={`Restore into a fork from the backup of ${when(x.started)}`}
                            title={`Restore ${addon.name} into a new add-on`}
                            changes={[
                              { label: 'New add-on', to: fork },
                              { label: addon.name, from: 'unchanged', to: 'unchanged' },
                            ]}
                            note={
                              <label>
                                Name of the fork{' '}
                                <input value={fork} onInput={(e) => setFork((e.currentTarget as HTMLInputElement).value)} />
                              </label>
                            }
                            run={() =>
                              ok(
                                api.POST('/v1/organizations/{org_slug}/addons/{addon}/restore', {
                                  ...params,
                                  body: { name: fork, backup_id: x.id },
                                }),
                              )
                            }
                            done="Restoring into the fork."
                            onDone={onChanged}
                          />
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </div>
      )}
    </Loading>
  );
}

/** The query each restore drill runs on its restored copy (read-only, as the application's role): set, change or remove it. */
function DrillCheck({ org, addon, onChanged }: { org: string; addon: Addon; onChanged: () => void }) {
  const [error, setError] = useState<string | null>(null);
  const [saved, setSaved] = useState(false);
  const put = async (query: string | null) => {
    try {
      await ok(
        api.PUT('/v1/organizations/{org_slug}/addons/{addon}/drills/check', {
          params: { path: { org_slug: org, addon: addon.name } },
          body: { query },
        }),
      );
      setError(null);
      setSaved(true);
      onChanged();
    } catch (e) {
      setSaved(false);
      setError(errorText(e));
    }
  };
  const fieldId = `drill-check-${addon.name}`;
  return (
    <form
      class="inline"
      aria-label={`Restore drill check of ${addon.name}`}
      onSubmit={(event) => {
        event.preventDefault();
        void put(String(new FormData(event.currentTarget as HTMLFormElement).get('query') ?? '').trim() || null);
      }}
    >
      <label for={fieldId}>Query each restore drill runs on the restored copy (read-only, 30 s at most)</label>
      <textarea
        id={fieldId}
        name="query"
        rows={2}
        maxLength={4000}
        placeholder="SELECT count(*) FROM orders"
        value={addon.drill_check_query ?? ''}
      />
      <button type="submit">Save check</button>
      {addon.drill_check_query !== null && (
        <button type="button" onClick={() => void put(null)}>
          Remove check
        </button>
      )}
      {saved && !error && (
        <span class="result ok" role="status">
          Saved.
        </span>
      )}
      <ErrorMessage message={error} />
    </form>
  );
}
