import { useState } from 'preact/hooks';
import { api, ok } from '../../api.js';
import { Loading } from '../../components/ui.js';
import { useLoad } from '../../hooks.js';
import { EnvironmentOptions, useEnvironments } from './environments-list.js';
import type { SectionProps } from './types.js';

const SCOPE_LABEL: Record<string, string> = {
  workspace: 'organization',
  team: 'team',
  project: 'project',
  environment: 'environment',
  service: 'application',
};

/**
 * What an instance of the application actually gets in one environment once every scope is
 * merged (organization, team, project, environment, application; the lower wins), each value with
 * the scope it came from and the scopes it shadows. Secrets come masked from the API.
 */
export function EffectiveConfigSection({ app, org, project }: SectionProps) {
  const environments = useEnvironments(org, project);
  const [environment, setEnvironment] = useState('production');
  const resolved = useLoad(
    () =>
      ok(
        api.GET('/v1/workspaces/{workspace}/projects/{project}/envs/{env}/services/{service}/config/resolved', {
          params: { path: { workspace: org, project, env: environment, service: app.slug } },
        }),
      ),
    [org, project, environment, app.slug],
  );
  return (
    <section class="panel" aria-labelledby="effective-h">
      <h2 id="effective-h" data-page-title>
        Effective configuration
      </h2>
      <label class="inline-label">
        Environment
        <select value={environment} onChange={(e) => setEnvironment((e.currentTarget as HTMLSelectElement).value)}>
          <EnvironmentOptions environments={environments.data} />
        </select>
      </label>
      <Loading state={resolved} what="the effective configuration">
        {(r) => (
          <>
            <p class="muted">
              Layers, the later winning:{' '}
              {[...r.scopes]
                .reverse()
                .map((s) => `${SCOPE_LABEL[s.scope] ?? s.scope} ${s.slug}`)
                .join(' → ')}
              .
            </p>
            {r.variables.length === 0 ? (
              <p class="muted empty">
                No variables reach {app.name} in {environment}.
              </p>
            ) : (
              <div class="table-scroll">
                <table aria-label="Effective configuration" class="app-list">
                  <thead>
                    <tr>
                      <th>Name</th>
                      <th>Value</th>
                      <th>From</th>
                      <th class="wide-only">Shadows</th>
                    </tr>
                  </thead>
                  <tbody>
                    {r.variables.map((v) => (
                      <tr key={v.name} data-variable={v.name}>
                        <td>
                          <code>{v.name}</code>
                          {v.buildtime && <span class="muted"> build</span>}
                        </td>
                        <td class="value">{v.secret ? <span class="muted">secret (hidden)</span> : <code class="wrap">{v.value}</code>}</td>
                        <td data-testid="scope">{SCOPE_LABEL[v.scope] ?? v.scope}</td>
                        <td class="wide-only">{v.overrides.length === 0 ? '—' : v.overrides.map((o) => SCOPE_LABEL[o] ?? o).join(', ')}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          </>
        )}
      </Loading>
    </section>
  );
}
