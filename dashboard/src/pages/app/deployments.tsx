import { useState } from 'preact/hooks';
import { api, ok } from '../../api.js';
import { LogView } from '../../components/log-view.js';
import { Loading } from '../../components/ui.js';
import { useEventStream, useLoad } from '../../hooks.js';
import { DeploymentTable } from './deployment-table.js';
import type { Deployment, SectionProps } from './types.js';

/** Every deployment with its environment, trigger and duration; filtered by environment; kept current by the event stream. */
export function DeploymentsSection({ app }: SectionProps) {
  const deployments = useLoad(
    () => ok(api.GET('/v1/applications/{application_id}/deployments', { params: { path: { application_id: app.id } } })),
    [app.id],
  );
  useEventStream(`/v1/applications/${app.id}/events`, { 'deployment.updated': () => deployments.reload() });
  const [environment, setEnvironment] = useState('');
  const [selected, setSelected] = useState<Deployment | null>(null);
  return (
    <section class="panel" aria-labelledby="history-h">
      <h2 id="history-h" data-page-title>
        Deployments
      </h2>
      <Loading state={deployments} what="deployments">
        {(page) => {
          const environments = [...new Set(page.items.map((d) => d.environment))].sort();
          const shown = page.items.filter((d) => environment === '' || d.environment === environment);
          return page.items.length === 0 ? (
            <p class="muted empty">No deployments yet.</p>
          ) : (
            <>
              <label class="inline-label">
                Environment
                <select value={environment} onChange={(e) => setEnvironment((e.currentTarget as HTMLSelectElement).value)}>
                  <option value="">All</option>
                  {environments.map((e) => (
                    <option key={e}>{e}</option>
                  ))}
                </select>
              </label>
              <div class="table-scroll">
                <DeploymentTable label="Deployment history" deployments={shown} onLog={setSelected} />
              </div>
            </>
          );
        }}
      </Loading>
      {selected && (
        <LogView
          key={selected.id}
          title={`Deployment of v${selected.release.version} log`}
          url={`/v1/deployments/${selected.id}/log/stream`}
        />
      )}
    </section>
  );
}
