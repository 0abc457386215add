import { useState } from 'preact/hooks';
import { api, ok, type Paths } from '../../api.js';
import { ConfirmAction } from '../../components/confirm.js';
import { Loading, Status, when } from '../../components/ui.js';
import { useLoad, type Loaded } from '../../hooks.js';
import type { Deployment } from './types.js';

type ReleasePage = Paths['/v1/releases/{application_id}']['get']['responses'][200]['content']['application/json'];

/** Releases newest first; each can be opened (what changed) or deployed again after a confirmation. */
export function Releases({ releases, serving }: { releases: Loaded<ReleasePage>; serving: Deployment[] }) {
  const [open, setOpen] = useState<string | null>(null);
  return (
    <section aria-labelledby="releases-h" class="panel">
      <h2 id="releases-h">Releases</h2>
      <Loading state={releases} what="releases">
        {(page) =>
          page.items.length === 0 ? (
            <p class="muted empty">No releases yet.</p>
          ) : (
            <ul class="plain">
              {page.items.slice(0, 8).map((r) => {
                const current = serving.find((d) => d.environment === r.environment);
                return (
                  <li key={r.id}>
                    <button type="button" class="link" aria-expanded={open === r.id} onClick={() => setOpen(open === r.id ? null : r.id)}>
                      v{r.version}
                    </button>{' '}
                    <span class="muted">{r.environment}</span>{' '}
                    <Status error={r.error} done={r.built} label={r.error ? 'failed' : r.built ? 'ready' : 'preparing'} />{' '}
                    {r.built && !r.error && current?.release.id !== r.id && (
                      <ConfirmAction
                        class="compact"
                        label={`Deploy v${r.version}`}
                        title={`Deploy release v${r.version}`}
                        environment={r.environment}
                        changes={[{ label: 'Release', from: current ? `v${current.release.version}` : null, to: `v${r.version}` }]}
                        run={() => ok(api.POST('/v1/releases/{release_id}/deploy', { params: { path: { release_id: r.id } } }))}
                        done={`Deploying release v${r.version}.`}
                      />
                    )}
                  </li>
                );
              })}
            </ul>
          )
        }
      </Loading>
      {open && <ReleaseDetail id={open} />}
    </section>
  );
}

function Changes({ title, changes }: { title: string; changes: { added: string[]; changed: string[]; removed: string[] } | null }) {
  if (!changes) return null;
  const parts = (['added', 'changed', 'removed'] as const).filter((k) => changes[k].length > 0);
  return (
    <p>
      <strong>{title}:</strong> {parts.length === 0 ? 'no changes' : parts.map((k) => `${k} ${changes[k].join(', ')}`).join('; ')}
    </p>
  );
}

/** A release: its image, commit, processes, and what changed in its image and configuration since the previous one. */
function ReleaseDetail({ id }: { id: string }) {
  const detail = useLoad(() => ok(api.GET('/v1/releases/{release_id}/detail', { params: { path: { release_id: id } } })), [id]);
  return (
    <div class="release-detail" aria-live="polite">
      <Loading state={detail} what="the release">
        {(r) => (
          <>
            <h3>Release v{r.version}</h3>
            <p>
              Image v{r.image?.version ?? '—'} <code>{r.commit_sha?.slice(0, 12) ?? '—'}</code> · {when(r.created)}
            </p>
            <p>Processes: {Object.keys(r.processes ?? {}).join(', ') || '—'}</p>
            <Changes title="Image changes" changes={r.image_changes} />
            <Changes title="Configuration changes" changes={r.configuration_changes} />
            <p class="muted">
              Configuration: {(r.configuration ?? []).map((c) => (c.secret ? `${c.name} (secret)` : c.name)).join(', ') || 'none'}
            </p>
          </>
        )}
      </Loading>
    </div>
  );
}
