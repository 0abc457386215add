import { useState } from 'preact/hooks';
import { api, errorText, ok } from '../api.js';
import { ErrorMessage, Loading, matches, SearchBox } from '../components/ui.js';
import { useLoad } from '../hooks.js';

/** The caller's organizations; on the home page (`embedded`) a section under the overview. */
export function OrganizationsPage({ embedded = false }: { embedded?: boolean }) {
  const orgs = useLoad(() => ok(api.GET('/v1/organizations')), []);
  const [query, setQuery] = useState('');
  const [error, setError] = useState<string | null>(null);
  const create = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    try {
      await ok(api.POST('/v1/organizations', { body: { name: String(new FormData(form).get('name')) } }));
      form.reset();
      setError(null);
      orgs.reload();
    } catch (e) {
      setError(errorText(e));
    }
  };
  return (
    <section aria-labelledby="orgs-h">
      {embedded ? <h2 id="orgs-h">Organizations</h2> : <h1 id="orgs-h">Organizations</h1>}
      <SearchBox label="Search organizations" value={query} onInput={setQuery} />
      <Loading state={orgs} empty="No organizations yet: create one below.">
        {(list) => (
          <ul class="cards">
            {list
              .filter((o) => matches(query, o.name, o.slug))
              .map((o) => (
                <li key={o.id}>
                  <a href={`/orgs/${o.slug}`}>{o.name}</a>
                  <span class="muted">
                    {' '}
                    {o.project_count} projects · {o.member_count} members
                  </span>
                </li>
              ))}
          </ul>
        )}
      </Loading>
      <form class="inline" onSubmit={create} aria-label="New organization">
        <input name="name" required placeholder="New organization name" aria-label="Organization name" />
        <button type="submit">Create organization</button>
      </form>
      <ErrorMessage message={error} />
    </section>
  );
}
