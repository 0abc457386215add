import { useState } from 'preact/hooks';
import { api, errorText, ok } from '../api.js';
import { ConfirmAction } from '../components/confirm.js';
import { ErrorMessage, Loading, matches, SearchBox } from '../components/ui.js';
import type { Schemas } from '../api.js';
import { useLoad } from '../hooks.js';
import { ROLES } from './invitations.js';
import { OrgNav } from './org-sections.js';
import { TeamsPanel } from './teams.js';
import { WebhooksPanel } from './webhooks.js';

/** One organization: its projects (search, create) and its members (add, remove, admin flag). */
export function OrganizationPage({ org }: { org: string }) {
  const detail = useLoad(() => ok(api.GET('/v1/organizations/{org_slug}', { params: { path: { org_slug: org } } })), [org]);
  const projects = useLoad(async () => (await ok(api.GET('/v1/projects'))).filter((p) => p.organization_slug === org), [org]);
  const [query, setQuery] = useState('');
  const [error, setError] = useState<string | null>(null);

  const act = async (work: () => Promise<unknown>, form?: HTMLFormElement) => {
    try {
      await work();
      form?.reset();
      setError(null);
      detail.reload();
      projects.reload();
    } catch (e) {
      setError(errorText(e));
    }
  };
  const field = (event: Event, name: string) => String(new FormData(event.currentTarget as HTMLFormElement).get(name));

  return (
    <Loading state={detail}>
      {(o) => (
        <>
          <p class="crumbs">
            <a href="/">Home</a> /
          </p>
          <h1>{o.name}</h1>
          <OrgNav org={org} current="overview" />
          <p>
            <a href={`/config/${org}`}>Organization configuration</a>
          </p>
          <ErrorMessage message={error} />
          <section aria-labelledby="projects-h">
            <h2 id="projects-h">Projects</h2>
            <SearchBox label="Search projects" value={query} onInput={setQuery} />
            <Loading state={projects} empty="No projects yet.">
              {(list) => (
                <ul class="cards">
                  {list
                    .filter((p) => matches(query, p.name, p.slug))
                    .map((p) => (
                      <li key={p.id}>
                        <a href={`/orgs/${org}/${p.slug}`}>{p.name}</a> <span class="muted">{p.application_count} applications</span>
                      </li>
                    ))}
                </ul>
              )}
            </Loading>
            <form
              class="inline"
              aria-label="New project"
              onSubmit={(e) => {
                e.preventDefault();
                void act(
                  () => ok(api.POST('/v1/projects', { body: { name: field(e, 'name'), organization_id: o.id } })),
                  e.currentTarget as HTMLFormElement,
                );
              }}
            >
              <input name="name" required placeholder="New project name" aria-label="Project name" />
              <button type="submit">Create project</button>
            </form>
          </section>
          <section aria-labelledby="members-h">
            <h2 id="members-h">Members</h2>
            <table>
              <thead>
                <tr>
                  <th>User</th>
                  <th>Role</th>
                  <th>
                    <span class="sr-only">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {o.members.map((m) => (
                  <tr key={m.user_id}>
                    <td>
                      {m.username} <span class="muted">{m.email}</span>
                    </td>
                    <td>
                      <MemberRole org={org} member={m} onDone={detail.reload} />
                    </td>
                    <td class="actions">
                      <ConfirmAction
                        label="Remove"
                        ariaLabel={`Remove ${m.username} from the organization`}
                        danger
                        title={`Remove ${m.username} from ${o.name}`}
                        changes={[
                          {
                            label: 'Access',
                            from: `member (${m.role})`,
                            to: 'none: every team and project of the organization',
                          },
                        ]}
                        run={() =>
                          ok(
                            api.DELETE('/v1/organizations/{org_slug}/members/{user_id}', {
                              params: { path: { org_slug: org, user_id: m.user_id } },
                            }),
                          )
                        }
                        done="Removed."
                        onDone={detail.reload}
                      />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            <form
              class="inline"
              aria-label="Add member"
              onSubmit={(e) => {
                e.preventDefault();
                const username = field(e, 'username');
                void act(
                  () => ok(api.POST('/v1/organizations/{org_slug}/members', { params: { path: { org_slug: org } }, body: { username } })),
                  e.currentTarget as HTMLFormElement,
                );
              }}
            >
              <input name="username" required placeholder="Username or e-mail" aria-label="Username or e-mail" />
              <button type="submit">Add member</button>
            </form>
          </section>
          <TeamsPanel org={org} />
          <WebhooksPanel org={org} />
        </>
      )}
    </Loading>
  );
}

/** A member's role: pick another, then confirm the change (from → to) before it is made. */
function MemberRole({ org, member: m, onDone }: { org: string; member: Schemas['Member']; onDone: () => void }) {
  const [role, setRole] = useState(m.role);
  return (
    <span class="member-role">
      <label class="inline-label">
        <span class="sr-only">Role of {m.username}</span>
        <select value={role} onChange={(e) => setRole((e.currentTarget as HTMLSelectElement).value as typeof role)}>
          {ROLES.map((r) => (
            <option key={r} value={r}>
              {r}
            </option>
          ))}
        </select>
      </label>
      {role !== m.role && (
        <ConfirmAction
          class="compact"
          label="Change role"
          ariaLabel={`Change role of ${m.username}`}
          title={`Change the role of ${m.username}`}
          changes={[{ label: 'Role', from: m.role, to: role }]}
          run={() =>
            ok(
              api.PUT('/v1/organizations/{org_slug}/members/{user_id}/role', {
                params: { path: { org_slug: org, user_id: m.user_id } },
                body: { role },
              }),
            )
          }
          done="Role changed."
          onDone={onDone}
        />
      )}
    </span>
  );
}
