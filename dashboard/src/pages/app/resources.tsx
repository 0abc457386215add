import { useRef, useState } from 'preact/hooks';
import { api, ApiError, errorText, ok } from '../../api.js';
import { ConfirmAction } from '../../components/confirm.js';
import { FieldError, invalidProps, Loading } from '../../components/ui.js';
import { useLoad } from '../../hooks.js';
import { EnvironmentOptions, useEnvironments } from './environments-list.js';
import type { SectionProps } from './types.js';

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`;

/** What the application uses besides its code: the organization's add-ons attached to it, and its volumes. */
export function ResourcesSection(props: SectionProps) {
  return (
    <>
      <h2 class="sr-only" id="resources-h" data-page-title>
        Add-ons and volumes
      </h2>
      <Addons {...props} />
      <Volumes {...props} />
    </>
  );
}

/**
 * The add-ons attached to this application (each environment's variable holding its URL), detach
 * and attach: both make a new release where the environment serves, so both ask first.
 */
function Addons({ app, org, project }: SectionProps) {
  const addons = useLoad(() => ok(api.GET('/v1/organizations/{org_slug}/addons', { params: { path: { org_slug: org } } })), [org]);
  const environments = useEnvironments(org, project);
  const [choice, setChoice] = useState({ addon: '', environment: 'production' });
  return (
    <section class="panel" aria-labelledby="addons-h">
      <h2 id="addons-h">Add-ons</h2>
      <Loading state={addons} what="add-ons">
        {(list) => {
          const attached = list.flatMap((a) => a.attachments.filter((t) => t.application_id === app.id).map((t) => ({ addon: a, t })));
          const available = list.filter((a) => a.status !== 'deleted');
          const addon = choice.addon || available[0]?.name || '';
          return (
            <>
              {attached.length === 0 ? (
                <p class="muted empty">No add-on is attached to {app.name}.</p>
              ) : (
                <ul class="plain">
                  {attached.map(({ addon: a, t }) => (
                    <li key={t.id} data-attachment={`${a.name}-${t.environment}`}>
                      <strong>{a.name}</strong> <span class="muted">{a.kind}</span> <span class="env">{t.environment}</span> as{' '}
                      <code>{t.variable}</code>{' '}
                      <span
                        class={`status ${a.status === 'running' ? 'status-ok' : a.status === 'failed' ? 'status-error' : 'status-busy'}`}
                      >
                        {a.status}
                      </span>{' '}
                      <ConfirmAction
                        class="compact"
                        label="Detach"
                        ariaLabel={`Detach ${a.name} from ${t.environment}`}
                        danger
                        title={`Detach ${a.name}`}
                        environment={t.environment}
                        changes={[{ label: t.variable, from: 'the add-on’s URL (secret)', to: 'removed, in a new release' }]}
                        note="The add-on and its data stay in the organization."
                        run={() =>
                          ok(
                            api.DELETE('/v1/organizations/{org_slug}/addons/{addon}/attachments/{attachment_id}', {
                              params: { path: { org_slug: org, addon: a.name, attachment_id: t.id } },
                            }),
                          )
                        }
                        done="Detached."
                        onDone={addons.reload}
                      />
                    </li>
                  ))}
                </ul>
              )}
              {available.length === 0 ? (
                <p class="muted">The organization has no add-on to attach (add-ons are created on the organization’s page).</p>
              ) : (
                <div class="form-row" role="group" aria-label="Attach an add-on">
                  <label>
                    Add-on
                    <select value={addon} onChange={(e) => setChoice({ ...choice, addon: (e.currentTarget as HTMLSelectElement).value })}>
                      {available.map((a) => (
                        <option key={a.id} value={a.name}>
                          {a.name} ({a.kind})
                        </option>
                      ))}
                    </select>
                  </label>
                  <label>
                    Environment
                    <select
                      value={choice.environment}
                      onChange={(e) => setChoice({ ...choice, environment: (e.currentTarget as HTMLSelectElement).value })}
                    >
                      <EnvironmentOptions environments={environments.data} />
                    </select>
                  </label>
                  <ConfirmAction
                    label="Attach"
                    title={`Attach ${addon} to ${app.name}`}
                    environment={choice.environment}
                    changes={[{ label: 'Configuration', to: `a secret variable with ${addon}’s URL, in a new release` }]}
                    run={() =>
                      ok(
                        api.POST('/v1/organizations/{org_slug}/addons/{addon}/attachments', {
                          params: { path: { org_slug: org, addon } },
                          body: { application_id: app.id, environment: choice.environment },
                        }),
                      )
                    }
                    done="Attached."
                    onDone={addons.reload}
                  />
                </div>
              )}
            </>
          );
        }}
      </Loading>
    </section>
  );
}

const VOLUME_FIELDS = ['name', 'mount_path', 'size_mib'] as const;
const NEW_VOLUME = { name: '', mount_path: '', size_mib: '1024', environment: 'production' };

/** The application's volumes with their usage; create one, or delete one and its data (asked first: the release redeploys). */
function Volumes({ app, org, project }: SectionProps) {
  const path = { params: { path: { application_id: app.id } } };
  const volumes = useLoad(() => ok(api.GET('/v1/applications/{application_id}/volumes', path)), [app.id]);
  const environments = useEnvironments(org, project);
  const [fields, setFields] = useState<Partial<Record<(typeof VOLUME_FIELDS)[number], string>>>({});
  const form = useRef<HTMLFormElement>(null);
  const [draft, setDraft] = useState<Record<string, string>>(NEW_VOLUME);
  // Run from the confirmation: a refusal naming a field goes under it, and the dialog's result only points there.
  const create = async () => {
    const data = new FormData(form.current!);
    try {
      await ok(
        api.POST('/v1/applications/{application_id}/volumes', {
          ...path,
          body: {
            name: String(data.get('name')).trim(),
            mount_path: String(data.get('mount_path')).trim(),
            size_mib: Number(data.get('size_mib')),
            environment: String(data.get('environment')),
          },
        }),
      );
      setFields({});
      form.current!.reset();
      setDraft(NEW_VOLUME);
      volumes.reload();
    } catch (e) {
      const named =
        e instanceof ApiError ? VOLUME_FIELDS.filter((f) => e.fields.some((x) => x.field.includes(f)) || e.message.includes(f)) : [];
      setFields(Object.fromEntries(named.map((f) => [f, errorText(e)])));
      throw named.length > 0 ? new Error('Not created: see the field above.') : e;
    }
  };
  return (
    <section class="panel" aria-labelledby="volumes-h">
      <h2 id="volumes-h">Volumes</h2>
      <Loading state={volumes} what="volumes">
        {(list) =>
          list.length === 0 ? (
            <p class="muted empty">No volumes: the application’s files last only as long as each instance.</p>
          ) : (
            <ul class="plain">
              {list.map((v) => (
                <li key={v.id} data-volume={v.name}>
                  <strong>{v.name}</strong> <span class="env">{v.environment ?? '—'}</span> at <code>{v.mount_path}</code> ({v.process_type}
                  ), {v.usage
                    ? `${mib(v.usage.used_bytes)} of ${mib(v.usage.size_bytes)} used`
                    : `${v.size_mib} MiB, not mounted here`}{' '}
                  <ConfirmAction
                    class="compact"
                    label="Delete"
                    ariaLabel={`Delete the volume ${v.name}`}
                    danger
                    title={`Delete the volume ${v.name}`}
                    environment={v.environment}
                    changes={[
                      { label: 'Data', from: `${v.size_mib} MiB at ${v.mount_path}`, to: 'deleted for good' },
                      { label: 'Release', to: 'redeployed without it (stop, then start)' },
                    ]}
                    run={() =>
                      ok(
                        api.DELETE('/v1/applications/{application_id}/volumes/{volume}', {
                          params: { path: { application_id: app.id, volume: v.name }, query: { environment: v.environment ?? undefined } },
                        }),
                      )
                    }
                    done="Deleted."
                    onDone={volumes.reload}
                  />
                </li>
              ))}
            </ul>
          )
        }
      </Loading>
      <form
        ref={form}
        aria-label="Create a volume"
        onSubmit={(e) => e.preventDefault()}
        onInput={(e) => setDraft(Object.fromEntries([...new FormData(e.currentTarget)].map(([k, v]) => [k, String(v)])))}
      >
        <h3>Create a volume</h3>
        <label>
          Volume name
          <input name="name" required autocomplete="off" {...invalidProps('name', fields.name)} />
        </label>
        <FieldError name="name" message={fields.name} />
        <label>
          Mount path
          <input name="mount_path" required placeholder="/data" {...invalidProps('mount_path', fields.mount_path)} />
        </label>
        <FieldError name="mount_path" message={fields.mount_path} />
        <label>
          Size (MiB)
          <input name="size_mib" type="number" min={1} required defaultValue="1024" {...invalidProps('size_mib', fields.size_mib)} />
        </label>
        <FieldError name="size_mib" message={fields.size_mib} />
        <label>
          Environment
          <select name="environment" defaultValue="production">
            <EnvironmentOptions environments={environments.data} />
          </select>
        </label>
        <ConfirmAction
          label="Create volume"
          title="Create a volume"
          environment={draft.environment}
          changes={[
            { label: 'Volume', to: `${draft.name || '(no name)'}: ${draft.size_mib} MiB at ${draft.mount_path || '(no path)'}` },
            { label: 'Release', to: 'redeployed stop-then-start: the instance is briefly unavailable' },
          ]}
          run={create}
          done="Created."
        />
      </form>
    </section>
  );
}
