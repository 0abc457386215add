import { api, ok } from '../../api.js';
import { ConfirmAction } from '../../components/confirm.js';
import { Loading, when } from '../../components/ui.js';
import { useLoad } from '../../hooks.js';
import type { Deployment, SectionProps } from './types.js';

/** A preview's state for this application, from its newest deployment there (the preview record only says stopped or not). */
function previewState(stopped: boolean, latest: Deployment | undefined): { text: string; tone: string } {
  if (stopped) return { text: 'stopped by the cap', tone: 'status-busy' };
  if (!latest) return { text: 'building, not deployed yet', tone: 'status-busy' };
  if (latest.error) return { text: `deployment failed (v${latest.release.version})`, tone: 'status-error' };
  if (latest.complete) return { text: `serving v${latest.release.version}`, tone: 'status-ok' };
  return { text: `deploying v${latest.release.version}`, tone: 'status-busy' };
}

/**
 * Preview environments, one per open pull request of the project: state, whose code it runs, the
 * application's URL there, and deleting one (its instances stop) behind a confirmation.
 */
export function PreviewsSection({ app, org, project }: SectionProps) {
  const path = { params: { path: { workspace: org, project } } };
  const previews = useLoad(() => ok(api.GET('/v1/workspaces/{workspace}/projects/{project}/previews', path)), [org, project]);
  const deployments = useLoad(
    () => ok(api.GET('/v1/applications/{application_id}/deployments', { params: { path: { application_id: app.id } } })),
    [app.id],
  );
  return (
    <section class="panel" aria-labelledby="previews-h">
      <h2 id="previews-h" data-page-title>
        Previews
      </h2>
      <Loading state={previews} what="previews">
        {({ settings, previews: list }) => (
          <>
            <p class="muted" data-testid="preview-settings">
              {settings.enabled
                ? `Previews are on: each pull request gets an environment copied from ${settings.template_environment ?? 'the template'}` +
                  `${settings.max_concurrent ? `, at most ${settings.max_concurrent} at once` : ''}` +
                  `${settings.copy_secrets ? ', secrets copied' : ', secrets not copied'}.`
                : 'Previews are off for this project (an organization admin turns them on).'}
            </p>
            {list.length === 0 ? (
              <p class="muted empty">No preview environments.</p>
            ) : (
              <ul class="plain previews">
                {list.map((p) => {
                  const url = p.urls[app.slug];
                  const state = previewState(
                    p.stopped,
                    deployments.data?.items.find((d) => d.environment === p.environment),
                  );
                  return (
                    <li key={p.environment} data-preview={p.environment}>
                      <p>
                        <strong>
                          #{p.pr_number} <span class="env">{p.environment}</span>
                        </strong>{' '}
                        <span class={`status ${state.tone}`} data-testid="preview-state">
                          {state.text}
                        </span>{' '}
                        <span class={`status ${p.trust === 'fork' ? 'status-busy' : ''}`}>
                          {p.trust === 'fork' ? 'from a fork: only variables marked for previews' : 'same repository'}
                        </span>
                      </p>
                      <p class="muted">
                        {p.head_repository ?? p.repository} at <code>{p.head_sha.slice(0, 12)}</code>, active {when(p.active)}
                      </p>
                      <p>{url ? <a href={url}>{url}</a> : <span class="muted">No URL for {app.name} here.</span>}</p>
                      <ConfirmAction
                        label="Delete"
                        ariaLabel={`Delete the preview ${p.environment}`}
                        danger
                        title={`Delete the preview ${p.environment}`}
                        environment={p.environment}
                        changes={[
                          {
                            label: 'Environment',
                            from: `${p.environment} (pull request #${p.pr_number})`,
                            to: 'deleted, instances stopped',
                          },
                        ]}
                        note="Its instances stop now; a new push to the pull request starts a fresh preview."
                        run={() =>
                          ok(
                            api.DELETE('/v1/workspaces/{workspace}/projects/{project}/envs/{env}', {
                              params: { path: { workspace: org, project, env: p.environment } },
                            }),
                          )
                        }
                        done="Deleted."
                        onDone={previews.reload}
                      />
                    </li>
                  );
                })}
              </ul>
            )}
          </>
        )}
      </Loading>
    </section>
  );
}
