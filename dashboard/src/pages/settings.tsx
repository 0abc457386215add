import { useState } from 'preact/hooks';
import { api, errorText, ok } from '../api.js';
import { ErrorMessage } from '../components/ui.js';

interface Settings {
  id: string;
  github_repository: string | null;
  auto_deploy_branch: string | null;
  subdirectory: string | null;
  health_check_path: string;
  deployment_timeout: number;
}

const orNull = (value: FormDataEntryValue | null) => (value === null || String(value).trim() === '' ? null : String(value).trim());

/** The application's build and deploy settings (PATCH settings: an emptied field is cleared). */
export function SettingsPanel({ app, onSaved }: { app: Settings; onSaved: () => void }) {
  const [error, setError] = useState<string | null>(null);
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
      setError(null);
      setSaved(true);
      onSaved();
    } catch (e) {
      setError(errorText(e));
      setSaved(false);
    }
  };
  return (
    <section class="panel" aria-labelledby="settings-h">
      <h2 id="settings-h">Settings</h2>
      <form onSubmit={save} aria-label="Application settings">
        <label>
          Repository (git URL or path)
          <input name="github_repository" value={app.github_repository ?? ''} autocomplete="off" />
        </label>
        <label>
          Auto-deploy branch
          <input name="auto_deploy_branch" value={app.auto_deploy_branch ?? ''} autocomplete="off" />
        </label>
        <label>
          Subdirectory
          <input name="subdirectory" value={app.subdirectory ?? ''} autocomplete="off" />
        </label>
        <label>
          Health check path
          <input name="health_check_path" value={app.health_check_path} required />
        </label>
        <label>
          Deployment timeout (seconds)
          <input type="number" name="deployment_timeout" min={5} max={3600} value={app.deployment_timeout} required />
        </label>
        <button type="submit">Save settings</button>
        <ErrorMessage message={error} />
        {saved && <p role="status">Settings saved.</p>}
      </form>
    </section>
  );
}
