import { api, ok, type Paths } from '../../api.js';
import { useLoad } from '../../hooks.js';

export type ProjectEnvironment =
  Paths['/v1/workspaces/{workspace}/projects/{project}/envs']['get']['responses'][200]['content']['application/json'][number];

/** The project's environments (every section that acts per environment offers these, protected ones marked). */
export function useEnvironments(org: string, project: string) {
  return useLoad(
    () => ok(api.GET('/v1/workspaces/{workspace}/projects/{project}/envs', { params: { path: { workspace: org, project } } })),
    [org, project],
  );
}

/** "production (protected)": how an environment is named in selects and dialogs. */
export const environmentLabel = (e: ProjectEnvironment) => (e.protected ? `${e.slug} (protected)` : e.slug);

/** The note a confirmation carries for an action in a protected environment. */
export const protectionNote = (e: ProjectEnvironment | undefined) =>
  e?.protected ? `${e.slug} is protected: only organization admins and members granted it may do this.` : undefined;

/** The project's environments as a select's options (production alone while they load: the default stays chosen). */
export function EnvironmentOptions({ environments }: { environments: ProjectEnvironment[] | undefined }) {
  if (!environments) return <option value="production">production</option>;
  return (
    <>
      {environments.map((e) => (
        <option key={e.slug} value={e.slug}>
          {environmentLabel(e)}
        </option>
      ))}
    </>
  );
}
