import { useMemo } from 'preact/hooks';
import { ConfigurationPanel, scopedConfig } from './configuration.js';

interface ScopeParams {
  org: string;
  team?: string;
  project?: string;
  env?: string;
}

/** Which scope a page shows, and what inherits its variables (highest layer last). */
function describe({ org, team, project, env }: ScopeParams) {
  if (env) return { title: `Environment ${env} of ${project}`, inheritedBy: `every application of ${project} deployed to ${env}` };
  if (project) return { title: `Project ${project}`, inheritedBy: `every application of ${project}, in every environment` };
  if (team) return { title: `Team ${team}`, inheritedBy: "the team's projects and their applications" };
  return { title: `Organization ${org}`, inheritedBy: 'every project and application of the organization' };
}

/**
 * The configuration of an organization, team, project or environment: the layers an
 * application inherits below its own variables (the API's workspace-group routes).
 */
export function ScopeConfigPage(params: ScopeParams) {
  const { org, team, project, env } = params;
  const part = encodeURIComponent;
  const prefix =
    `/v1/workspaces/${part(org)}` +
    (team ? `/teams/${part(team)}` : '') +
    (project ? `/projects/${part(project)}` : '') +
    (env ? `/envs/${part(env)}` : '');
  const endpoints = useMemo(() => scopedConfig(prefix), [prefix]);
  const { title, inheritedBy } = describe(params);
  return (
    <>
      <p class="crumbs">
        <a href="/">Organizations</a> / <a href={`/orgs/${org}`}>{org}</a> /{project && <a href={`/orgs/${org}/${project}`}> {project}</a>}
        {project && ' /'}
      </p>
      <h1>Configuration: {title}</h1>
      <p class="muted">Inherited by {inheritedBy}, unless a lower layer sets the same name.</p>
      <ConfigurationPanel endpoints={endpoints} />
    </>
  );
}
