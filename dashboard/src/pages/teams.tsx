import { useState } from 'preact/hooks';
import { api, errorText, ok } from '../api.js';
import { ConfirmAction } from '../components/confirm.js';
import { ErrorMessage, Loading } from '../components/ui.js';
import { useLoad } from '../hooks.js';

/** An organization's teams (workspace = organization): create, delete, add and remove members. */
export function TeamsPanel({ org }: { org: string }) {
  const teams = useLoad(() => ok(api.GET('/v1/workspaces/{workspace}/teams', { params: { path: { workspace: org } } })), [org]);
  const [error, setError] = useState<string | null>(null);
  const run = async (work: () => Promise<unknown>, form?: HTMLFormElement) => {
    try {
      await work();
      form?.reset();
      setError(null);
      teams.reload();
    } catch (e) {
      setError(errorText(e));
    }
  };
  const field = (event: Event, name: string) => String(new FormData(event.currentTarget as HTMLFormElement).get(name));
  return (
    <section aria-labelledby="teams-h">
      <h2 id="teams-h">Teams</h2>
      <ErrorMessage message={error} />
      <Loading state={teams} empty="No teams yet.">
        {(list) => (
          <ul class="cards">
            {list.map((t) => {
              const path = { workspace: org, team: t.slug };
              return (
                <li key={t.id} data-team={t.slug}>
                  <strong>{t.name}</strong> <span class="muted">projects: {t.projects.join(', ') || 'none'}</span>{' '}
                  <a href={`/config/${org}/teams/${t.slug}`} aria-label={`Configuration of ${t.name}`}>
                    configuration
                  </a>
                  <ul class="plain">
                    {t.members.map((m) => (
                      <li key={m.user_id}>
                        {m.username}{' '}
                        <ConfirmAction
                          class="compact"
                          label="remove"
                          ariaLabel={`Remove ${m.username} from ${t.name}`}
                          danger
                          title={`Remove ${m.username} from ${t.name}`}
                          changes={[
                            {
                              label: 'Team access',
                              from: `member of ${t.name}`,
                              to: 'none through this team (the organization membership stays)',
                            },
                          ]}
                          run={() =>
                            ok(
                              api.DELETE('/v1/workspaces/{workspace}/teams/{team}/members/{user_id}', {
                                params: { path: { ...path, user_id: m.user_id } },
                              }),
                            )
                          }
                          done="Removed."
                          onDone={teams.reload}
                        />
                      </li>
                    ))}
                  </ul>
                  <form
                    class="inline"
                    aria-label={`Add a member to ${t.name}`}
                    onSubmit={(e) => {
                      e.preventDefault();
                      const username = field(e, 'username');
                      void run(
                        () => ok(api.POST('/v1/workspaces/{workspace}/teams/{team}/members', { params: { path }, body: { username } })),
                        e.currentTarget as HTMLFormElement,
                      );
                    }}
                  >
                    <input name="username" required placeholder="Username or e-mail" aria-label={`New member of ${t.name}`} />
                    <button type="submit">Add to team</button>
                    <ConfirmAction
                      label="Delete team"
                      ariaLabel={`Delete team ${t.name}`}
                      danger
                      title={`Delete the team ${t.name}`}
                      changes={[{ label: 'Team', from: `${t.members.length} member${t.members.length === 1 ? '' : 's'}`, to: 'deleted' }]}
                      note="Its members stay in the organization; access they had only through the team ends."
                      run={() => ok(api.DELETE('/v1/workspaces/{workspace}/teams/{team}', { params: { path } }))}
                      done="Deleted."
                      onDone={teams.reload}
                    />
                  </form>
                </li>
              );
            })}
          </ul>
        )}
      </Loading>
      <form
        class="inline"
        aria-label="New team"
        onSubmit={(e) => {
          e.preventDefault();
          const name = field(e, 'name');
          void run(
            () => ok(api.POST('/v1/workspaces/{workspace}/teams', { params: { path: { workspace: org } }, body: { name } })),
            e.currentTarget as HTMLFormElement,
          );
        }}
      >
        <input name="name" required placeholder="New team name" aria-label="Team name" />
        <button type="submit">Create team</button>
      </form>
    </section>
  );
}
