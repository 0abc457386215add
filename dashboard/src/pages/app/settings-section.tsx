import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { api, ApiError, errorText, ok } from '../../api.js';
import { Icon } from '../../components/icons.js';
import { ErrorMessage, FieldError, invalidProps } from '../../components/ui.js';
import { SettingsPanel } from '../settings.js';
import { GitRemotePanel } from './git-remote.js';
import type { SectionProps } from './types.js';

/** Settings: build and deploy settings, the git remote, the display name, and deleting the application. */
export function SettingsSection({ app, org, project, reloadApp }: SectionProps) {
  return (
    <>
      <SettingsPanel app={app} onSaved={reloadApp} />
      <GitRemotePanel app={app} />
      <Rename app={app} onSaved={reloadApp} />
      <Delete app={app} org={org} project={project} />
    </>
  );
}

function Rename({ app, onSaved }: { app: SectionProps['app']; onSaved: () => void }) {
  const [fieldError, setFieldError] = useState<string>();
  const [error, setError] = useState<string | null>(null);
  const [saved, setSaved] = useState(false);
  const rename = async (event: Event) => {
    event.preventDefault();
    const name = String(new FormData(event.currentTarget as HTMLFormElement).get('app_name')).trim();
    try {
      await ok(api.PATCH('/v1/applications/{application_id}/settings', { params: { path: { application_id: app.id } }, body: { name } }));
      setFieldError(undefined);
      setError(null);
      setSaved(true);
      onSaved();
    } catch (e) {
      setSaved(false);
      const named = e instanceof ApiError && e.fields.some((f) => f.field.includes('name'));
      setFieldError(named ? errorText(e) : undefined);
      setError(named ? null : errorText(e));
    }
  };
  return (
    <section class="panel" aria-labelledby="rename-h">
      <h2 id="rename-h">Name</h2>
      <form aria-label="Rename the application" onSubmit={rename} onInput={() => setSaved(false)}>
        <label>
          Display name
          <input
            name="app_name"
            required
            maxLength={100}
            defaultValue={app.name}
            autocomplete="off"
            {...invalidProps('app_name', fieldError)}
          />
        </label>
        <FieldError name="app_name" message={fieldError} />
        <p class="muted">
          Its slug, <code>{app.slug}</code>, stays: paths, host names and the CLI keep working.
        </p>
        <button type="submit">Rename</button>
        <ErrorMessage message={error} />
        {saved && <p role="status">Renamed.</p>}
      </form>
    </section>
  );
}

/** Deleting asks for the application's slug typed out: nothing else enables the button. */
function Delete({ app, org, project }: { app: SectionProps['app']; org: string; project: string }) {
  const location = useLocation();
  const [typed, setTyped] = useState('');
  const [working, setWorking] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const remove = async (event: Event) => {
    event.preventDefault();
    if (typed.trim() !== app.slug) return;
    setWorking(true);
    try {
      await ok(api.DELETE('/v1/applications/{application_id}', { params: { path: { application_id: app.id } } }));
      location.route(`/orgs/${org}/${project}`);
    } catch (e) {
      setError(errorText(e));
      setWorking(false);
    }
  };
  return (
    <section class="panel danger-zone" aria-labelledby="delete-h">
      <h2 id="delete-h">Delete the application</h2>
      <p>
        This stops and unroutes every instance of <strong>{app.name}</strong> in every environment and removes its records: releases,
        deployments, configuration, domains and cron jobs. Add-ons attached to it stay in the organization. It cannot be undone; an
        application running in a protected environment is deleted by organization admins only.
      </p>
      <form aria-label="Delete the application" onSubmit={remove}>
        <label>
          Type <code>{app.slug}</code> to confirm
          <input
            name="confirm_slug"
            autocomplete="off"
            value={typed}
            onInput={(e) => setTyped((e.currentTarget as HTMLInputElement).value)}
          />
        </label>
        <button type="submit" class="danger primary" disabled={typed.trim() !== app.slug || working}>
          <Icon name={working ? 'busy' : 'warning'} class={working ? 'spin' : undefined} />
          {working ? 'Deleting…' : `Delete ${app.name}`}
        </button>
        <ErrorMessage message={error} />
      </form>
    </section>
  );
}
