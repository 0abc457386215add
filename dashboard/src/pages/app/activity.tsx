import { api, ok } from '../../api.js';
import { Loading, when } from '../../components/ui.js';
import { useLoad } from '../../hooks.js';
import type { SectionProps } from './types.js';

/** Who did what to this application: the organization's audit log, this application's entries. */
export function ActivitySection({ app, org }: SectionProps) {
  const entries = useLoad(
    () =>
      ok(
        api.GET('/v1/organizations/{org_slug}/audit-log', {
          params: { path: { org_slug: org }, query: { resource_id: app.id, per_page: 50 } },
        }),
      ),
    [org, app.id],
  );
  return (
    <section class="panel" aria-labelledby="activity-h">
      <h2 id="activity-h" data-page-title>
        Activity
      </h2>
      <Loading state={entries} what="the audit log">
        {(page) =>
          page.items.length === 0 ? (
            <p class="muted empty">No recorded changes to this application yet.</p>
          ) : (
            <div class="table-scroll">
              {/* Focusable: at phone width the table scrolls sideways, and the keyboard must be able to scroll it. */}
              <table aria-label="Audit log" tabIndex={0}>
                <thead>
                  <tr>
                    <th>When</th>
                    <th>Who</th>
                    <th>What</th>
                    <th class="wide-only">Request</th>
                  </tr>
                </thead>
                <tbody>
                  {page.items.map((e) => (
                    <tr key={e.id} data-audit={e.action} class={e.denied ? 'row-error' : undefined}>
                      <td>{when(e.at)}</td>
                      <td>{e.actor.username ?? e.actor.credential_kind}</td>
                      <td>
                        <code>{e.action}</code> {e.denied && <span class="status status-error">denied</span>}
                      </td>
                      <td class="wide-only">
                        <code>{e.request_id}</code>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </Loading>
    </section>
  );
}
