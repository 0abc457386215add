import { useState } from 'preact/hooks';
import { api, errorText, ok, type Schemas } from '../api.js';
import { ConfirmAction } from '../components/confirm.js';
import { LogView } from '../components/log-view.js';
import { ErrorMessage, Loading, Status, when } from '../components/ui.js';
import { useLoad } from '../hooks.js';
import { MaintenanceToggle } from './maintenance.js';

type EnvDeploy = Schemas['EnvDeploy'];

/** A project's environments: deploy one, promote what serves in another into it, follow the deploy's log. */
export function EnvironmentsPanel({ org, project }: { org: string; project: string }) {
  const projectPath = { workspace: org, project };
  const envs = useLoad(
    () => ok(api.GET('/v1/workspaces/{workspace}/projects/{project}/envs', { params: { path: projectPath } })),
    [org, project],
  );
  const [error, setError] = useState<string | null>(null);
  const [following, setFollowing] = useState<{ env: string; deploy: EnvDeploy } | null>(null);

  const run = async (work: () => Promise<unknown>) => {
    try {
      await work();
      setError(null);
      envs.reload();
    } catch (e) {
      setError(errorText(e));
    }
  };
  const start = (env: string, work: () => Promise<EnvDeploy>) =>
    run(async () => {
      setFollowing({ env, deploy: await work() });
    });
  // The source picked for each environment's promotion (default: the first other environment).
  const [sources, setSources] = useState<Record<string, string>>({});

  return (
    <section aria-labelledby="envs-h">
      <h2 id="envs-h">Environments</h2>
      <ErrorMessage message={error} />
      <Loading state={envs} empty="No environments.">
        {(list) => (
          <table>
            <thead>
              <tr>
                <th>Environment</th>
                <th>Type</th>
                <th>Branch</th>
                <th>
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.map((e) => {
                const path = { params: { path: { ...projectPath, env: e.slug } } };
                const others = list.filter((o) => o.slug !== e.slug);
                return (
                  <tr key={e.id} data-environment={e.slug}>
                    <td>
                      {e.name} {e.protected && <span class="status">protected</span>}{' '}
                      <a
                        href={`/config/${projectPath.workspace}/projects/${projectPath.project}/envs/${e.slug}`}
                        aria-label={`Configuration of ${e.slug}`}
                      >
                        configuration
                      </a>
                    </td>
                    <td>{e.env_type}</td>
                    <td>{e.auto_deploy_branch ?? '—'}</td>
                    <td class="actions">
                      <button
                        type="button"
                        onClick={() =>
                          start(e.slug, () => ok(api.POST('/v1/workspaces/{workspace}/projects/{project}/envs/{env}/deploy', path)))
                        }
                      >
                        Deploy {e.slug}
                      </button>
                      <MaintenanceToggle org={projectPath.workspace} project={projectPath.project} env={e.slug} />
                      {others.length > 0 && (
                        <span class="inline" role="group" aria-label={`Promote into ${e.slug}`}>
                          <label>
                            <span class="sr-only">Promote into {e.slug} from</span>
                            <select
                              name="from"
                              value={sources[e.slug] ?? others[0]!.slug}
                              onChange={(event) => setSources({ ...sources, [e.slug]: (event.currentTarget as HTMLSelectElement).value })}
                            >
                              {others.map((o) => (
                                <option key={o.slug} value={o.slug}>
                                  from {o.slug}
                                </option>
                              ))}
                            </select>
                          </label>
                          <ConfirmAction
                            label="Promote"
                            title={`Promote into ${e.slug}`}
                            environment={e.slug}
                            changes={[
                              {
                                label: 'Releases',
                                from: `what serves in ${e.slug}`,
                                to: `what serves in ${sources[e.slug] ?? others[0]!.slug}`,
                              },
                            ]}
                            note={e.protected ? 'A protected environment: only those allowed to deploy it may promote into it.' : undefined}
                            run={async () => {
                              const from = sources[e.slug] ?? others[0]!.slug;
                              const deploy = await ok(
                                api.POST('/v1/workspaces/{workspace}/projects/{project}/envs/{env}/promote', { ...path, body: { from } }),
                              );
                              setFollowing({ env: e.slug, deploy });
                              envs.reload();
                            }}
                            done="Promotion started."
                          />
                        </span>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        )}
      </Loading>
      <form
        class="inline"
        aria-label="New environment"
        onSubmit={(event) => {
          event.preventDefault();
          const form = event.currentTarget as HTMLFormElement;
          const name = String(new FormData(form).get('name'));
          void run(async () => {
            await ok(api.POST('/v1/workspaces/{workspace}/projects/{project}/envs', { params: { path: projectPath }, body: { name } }));
            form.reset();
          });
        }}
      >
        <input name="name" required placeholder="New environment name" aria-label="Environment name" />
        <button type="submit">Create environment</button>
      </form>
      {following && (
        <>
          <p>
            {following.deploy.kind === 'promote' ? `Promotion from ${following.deploy.from} into` : 'Deploy of'} {following.env}, started{' '}
            {when(following.deploy.created)}{' '}
            <Status error={following.deploy.error} done={following.deploy.complete} label={following.deploy.status} />
          </p>
          <LogView
            key={following.deploy.id}
            title={`${following.env} deploy`}
            url={`/v1/workspaces/${org}/projects/${project}/envs/${following.env}/deploys/${following.deploy.id}/log/stream`}
          />
        </>
      )}
    </section>
  );
}
