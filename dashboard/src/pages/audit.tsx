import { useState } from 'preact/hooks';
import { api, ok } from '../api.js';
import { Loading, when } from '../components/ui.js';
import { useLoad } from '../hooks.js';

const PER_PAGE = 50;

/** The organization's audit log (its admins): who did what to which resource, newest first, a page at a time. */
export function AuditSection({ org }: { org: string }) {
  const [page, setPage] = useState(1);
  const [actor, setActor] = useState('');
  const entries = useLoad(
    () =>
      ok(
        api.GET('/v1/organizations/{org_slug}/audit-log', {
          params: { path: { org_slug: org }, query: { page, per_page: PER_PAGE, ...(actor ? { actor } : {}) } },
        }),
      ),
    [org, page, actor],
  );
  return (
    <section aria-labelledby="audit-h">
      <h2 id="audit-h">Entries</h2>
      <form
        class="inline"
        aria-label="Filter the audit log"
        onSubmit={(e) => {
          e.preventDefault();
          setPage(1);
          setActor(String(new FormData(e.currentTarget as HTMLFormElement).get('actor')).trim());
        }}
      >
        <input name="actor" placeholder="Username" aria-label="Only this user" />
        <button type="submit">Filter</button>
      </form>
      <Loading state={entries} what="the audit log">
        {(result) =>
          result.items.length === 0 ? (
            <p class="muted empty">No entries{actor ? ` by ${actor}` : ''}.</p>
          ) : (
            <>
              <div class="table-scroll">
                <table aria-label="Audit log">
                  <thead>
                    <tr>
                      <th>When</th>
                      <th>Who</th>
                      <th>Action</th>
                      <th class="wide-only">Resource</th>
                    </tr>
                  </thead>
                  <tbody>
                    {result.items.map((e) => (
                      <tr key={e.id} class={e.denied ? 'row-error' : undefined}>
                        <td>{when(e.at)}</td>
                        <td>{e.actor.username ?? '—'}</td>
                        <td>
                          <code>{e.action}</code>
                          {e.denied && <span class="status status-error">refused</span>}
                        </td>
                        <td class="wide-only">
                          {e.resource_type} <span class="muted">{e.resource_id ?? ''}</span>
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
              <div class="buttons">
                <button type="button" disabled={page === 1} onClick={() => setPage(page - 1)}>
                  Newer
                </button>
                <button type="button" disabled={page >= result.pagination.pages} onClick={() => setPage(page + 1)}>
                  Older
                </button>
              </div>
            </>
          )
        }
      </Loading>
    </section>
  );
}
