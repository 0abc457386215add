import { useState } from 'preact/hooks';
import { api, errorText, ok } from '../../api.js';
import { ErrorMessage } from '../../components/ui.js';
import type { Application } from './types.js';

const POD_CLASSES = [
  'm1.small',
  'm1.medium',
  'm1.large',
  'c1.small',
  'c1.medium',
  'c1.large',
  'r1.small',
  'r1.medium',
  'r1.large',
  'r1.xlarge',
  'r1.2xlarge',
] as const;
type PodClass = (typeof POD_CLASSES)[number];

/** Process types with their counts and pod classes; scaling errors appear beside the form that failed. */
export function Processes({ app, serving, onScaled }: { app: Application; serving: Record<string, number>; onScaled: () => void }) {
  // What serves names its process types too (a release's Procfile), before any scale was set.
  const types = Object.keys({ ...serving, ...app.process_counts, ...app.process_pod_classes }).sort();
  const [error, setError] = useState<{ form: string; message: string } | null>(null);
  const scale = async (event: Event, known?: string) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const type = known ?? String(form.get('type'));
    try {
      await ok(
        api.POST('/v1/applications/{application_id}/scale', {
          params: { path: { application_id: app.id } },
          body: {
            process_counts: { [type]: Number(form.get('count')) },
            process_pod_classes: { [type]: String(form.get('pod_class')) as PodClass },
          },
        }),
      );
      setError(null);
      onScaled();
    } catch (e) {
      setError({ form: known ?? '', message: errorText(e) });
    }
  };
  return (
    <section aria-labelledby="processes-h" class="panel">
      <h2 id="processes-h">Processes</h2>
      {types.length === 0 ? (
        <p class="muted empty">No process types yet: they come from the Procfile of the first release.</p>
      ) : (
        <ul class="plain">
          {types.map((type) => (
            <li key={type}>
              <form class="inline scale" aria-label={`Scale ${type}`} onSubmit={(e) => scale(e, type)}>
                <strong>{type}</strong>
                <span data-testid={`count-${type}`}>{app.process_counts[type] ?? serving[type] ?? 0} running</span>
                <label>
                  Instances
                  <input type="number" name="count" min={0} max={100} value={app.process_counts[type] ?? serving[type] ?? 0} required />
                </label>
                <label>
                  Pod class
                  <select name="pod_class" value={app.process_pod_classes[type] ?? 'm1.small'}>
                    {POD_CLASSES.map((c) => (
                      <option key={c}>{c}</option>
                    ))}
                  </select>
                </label>
                <button type="submit">Scale</button>
              </form>
              {error?.form === type && <ErrorMessage message={error.message} />}
            </li>
          ))}
        </ul>
      )}
      <form class="inline scale" aria-label="Scale another process type" onSubmit={(e) => scale(e)}>
        <label>
          Process type
          <input name="type" required pattern="[a-z][a-z0-9_-]{0,62}" placeholder="web" />
        </label>
        <label>
          Instances
          <input type="number" name="count" min={0} max={100} value={1} required />
        </label>
        <input type="hidden" name="pod_class" value="m1.small" />
        <button type="submit">Scale</button>
      </form>
      {error?.form === '' && <ErrorMessage message={error.message} />}
    </section>
  );
}
