import { useState } from 'preact/hooks';
import { api, errorText, ok } from '../api.js';
import { ErrorMessage, Loading, matches, SearchBox } from '../components/ui.js';
import { useLoad } from '../hooks.js';
import { ComposeImportPanel } from './compose-import.js';
import { EnvironmentsPanel } from './environments.js';

/** A project's applications, with search and creation, and a Compose file import. */
export function ProjectPage({ org, project }: { org: string; project: string }) {
  const detail = useLoad(
    () => ok(api.GET('/v1/projects/{org_slug}/{project_slug}', { params: { path: { org_slug: org, project_slug: project } } })),
    [org, project],
  );
  const apps = useLoad(
    () => ok(api.GET('/v1/applications/{org_slug}/{project_slug}', { params: { path: { org_slug: org, project_slug: project } } })),
    [org, project],
  );
  const [query, setQuery] = useState('');
  const [error, setError] = useState<string | null>(null);
  return (
    <Loading state={detail}>
      {(p) => (
        <>
          <p class="crumbs">
            <a href="/">Organizations</a> / <a href={`/orgs/${org}`}>{org}</a> /
          </p>
          <h1>{p.name}</h1>
          <p>
            <a href={`/config/${org}/projects/${project}`}>Project configuration</a>
          </p>
          <h2>Applications</h2>
          <SearchBox label="Search applications" value={query} onInput={setQuery} />
          <Loading state={apps} empty="No applications yet.">
            {(list) => (
              <table>
                <thead>
                  <tr>
                    <th>Application</th>
                    <th>Image</th>
                    <th>Release</th>
                    <th>Deployed</th>
                  </tr>
                </thead>
                <tbody>
                  {list
                    .filter((a) => matches(query, a.name, a.slug))
                    .map((a) => (
                      <tr key={a.id}>
                        <td>
                          <a href={`/apps/${org}/${project}/${a.slug}`}>{a.name}</a>
                        </td>
                        <td>{a.latest_image_version ?? '—'}</td>
                        <td>{a.latest_release_version ?? '—'}</td>
                        <td>{a.latest_deployment_complete === null ? '—' : a.latest_deployment_complete ? 'yes' : 'no'}</td>
                      </tr>
                    ))}
                </tbody>
              </table>
            )}
          </Loading>
          <form
            class="inline"
            aria-label="New application"
            onSubmit={async (e) => {
              e.preventDefault();
              const form = e.currentTarget as HTMLFormElement;
              try {
                await ok(api.POST('/v1/applications', { body: { name: String(new FormData(form).get('name')), project_id: p.id } }));
                form.reset();
                setError(null);
                apps.reload();
              } catch (failure) {
                setError(errorText(failure));
              }
            }}
          >
            <input name="name" required placeholder="New application name" aria-label="Application name" />
            <button type="submit">Create application</button>
          </form>
          <ErrorMessage message={error} />
          <ComposeImportPanel projectId={p.id} onApplied={apps.reload} />
          <EnvironmentsPanel org={org} project={project} />
        </>
      )}
    </Loading>
  );
}
