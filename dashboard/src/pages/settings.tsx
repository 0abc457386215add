import { useState } from 'preact/hooks';
import { api, ApiError, errorText, ok } from '../api.js';
import { ErrorMessage, FieldError, invalidProps } from '../components/ui.js';

interface Settings {
  id: string;
  github_repository: string | null;
  auto_deploy_branch: string | null;
  subdirectory: string | null;
  health_check_path: string;
  deployment_timeout: number;
}

const orNull = (value: FormDataEntryValue | null) => (value === null || String(value).trim() === '' ? null : String(value).trim());

interface Refusal {
  /** Field name → the API's words about it, shown under that field. */
  fields: Record<string, string>;
  /** What the API said that names no field of this form (with the request id). */
  other: string | null;
}

/**
 * The application's build and deploy settings (PATCH settings: an emptied field is cleared). The
 * inputs are uncontrolled (defaultValue): a refused save leaves every edit where the user made it.
 */
export function SettingsPanel({ app, onSaved }: { app: Settings; onSaved: () => void }) {
  const [refusal, setRefusal] = useState<Refusal | null>(null);
  const [saved, setSaved] = useState(false);
  const save = async (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    try {
      await ok(
        api.PATCH('/v1/applications/{application_id}/settings', {
          params: { path: { application_id: app.id } },
          body: {
            github_repository: orNull(form.get('github_repository')),
            auto_deploy_branch: orNull(form.get('auto_deploy_branch')),
            subdirectory: orNull(form.get('subdirectory')),
            health_check_path: String(form.get('health_check_path')),
            deployment_timeout: Number(form.get('deployment_timeout')),
          },
        }),
      );
      setRefusal(null);
      setSaved(true);
      onSaved();
    } catch (e) {
      setSaved(false);
      const named = e instanceof ApiError ? e.fields.filter((f) => form.has(f.field)) : [];
      const suffix = e instanceof ApiError && e.requestId ? ` (request ${e.requestId})` : '';
      setRefusal({
        fields: Object.fromEntries(named.map((f) => [f.field, `${f.field} ${f.message}${suffix}`])),
        other: named.length > 0 ? null : errorText(e),
      });
    }
  };
  const field = (name: keyof Settings) => refusal?.fields[name];
  const text = (name: keyof Settings, label: string, value: string | null, required = false) => (
    <>
      <label>
        {label}
        <input name={name} defaultValue={value ?? ''} autocomplete="off" required={required} {...invalidProps(name, field(name))} />
      </label>
      <FieldError name={name} message={field(name)} />
    </>
  );
  return (
    <section class="panel" aria-labelledby="settings-h">
      <h2 id="settings-h" data-page-title>
        Settings
      </h2>
      <form onSubmit={save} aria-label="Application settings" onInput={() => setSaved(false)}>
        {text('github_repository', 'Repository (git URL or path)', app.github_repository)}
        {text('auto_deploy_branch', 'Auto-deploy branch', app.auto_deploy_branch)}
        {text('subdirectory', 'Subdirectory', app.subdirectory)}
        {text('health_check_path', 'Health check path', app.health_check_path, true)}
        <label>
          Deployment timeout (seconds)
          <input
            type="number"
            name="deployment_timeout"
            min={5}
            max={3600}
            defaultValue={String(app.deployment_timeout)}
            required
            {...invalidProps('deployment_timeout', field('deployment_timeout'))}
          />
        </label>
        <FieldError name="deployment_timeout" message={field('deployment_timeout')} />
        <button type="submit">Save settings</button>
        <ErrorMessage message={refusal?.other} />
        {saved && <p role="status">Settings saved.</p>}
      </form>
    </section>
  );
}
