import { api, ok } from '../../api.js';
import { ConfirmAction } from '../../components/confirm.js';
import { Loading } from '../../components/ui.js';
import { useLoad } from '../../hooks.js';
import { CopyLine } from './copy-line.js';
import type { SectionProps } from './types.js';

/**
 * The application's git remote on this server (`git push` builds and deploys), with the lines to
 * copy, and its push rule: whether a push that rewrites a branch (force push) is accepted.
 */
export function GitRemotePanel({ app }: { app: SectionProps['app'] }) {
  const path = { params: { path: { application_id: app.id } } };
  const remote = useLoad(() => ok(api.GET('/v1/applications/{application_id}/git-remote', path)), [app.id]);
  return (
    <section class="panel" aria-labelledby="git-remote-h">
      <h2 id="git-remote-h">Git remote</h2>
      <Loading state={remote} what="the git remote">
        {(r) => {
          const url = `${window.location.origin}${r.path}`;
          return (
            <>
              <p>Pushing to this remote builds and deploys the pushed branch. git asks for a password: give an API key (any user name).</p>
              <CopyLine label="Git remote URL" text={url} />
              <CopyLine label="Add the remote" text={`git remote add slipway ${url}`} />
              <CopyLine label="Push to deploy" text="git push slipway main" />
              <div>
                Force push: <strong>{r.allow_force_push ? 'accepted' : 'refused'}</strong>{' '}
                <ConfirmAction
                  class="compact"
                  label={r.allow_force_push ? 'Refuse force push' : 'Allow force push'}
                  danger={!r.allow_force_push}
                  title={r.allow_force_push ? 'Refuse force push' : 'Allow force push'}
                  changes={[
                    {
                      label: 'A push that rewrites or deletes a branch',
                      from: r.allow_force_push ? 'accepted' : 'refused',
                      to: r.allow_force_push ? 'refused' : 'accepted',
                    },
                  ]}
                  run={() =>
                    ok(
                      api.PATCH('/v1/applications/{application_id}/git-remote', {
                        ...path,
                        body: { allow_force_push: !r.allow_force_push },
                      }),
                    )
                  }
                  done="Saved."
                  onDone={remote.reload}
                />
              </div>
            </>
          );
        }}
      </Loading>
    </section>
  );
}
