import { api, ok } from '../../api.js';
import { ConfirmAction } from '../../components/confirm.js';
import { useLoad } from '../../hooks.js';
import type { Deployment, SectionProps } from './types.js';

/**
 * Roll back what serves in an environment, after a confirmation that shows the API's own preview
 * (`GET …/rollback/preview`): serving → target release, the refusal if the API would refuse, and
 * each Postgres add-on whose migrations the rollback leaves in place with its restore point. The
 * dashboard never restores data itself: restoring is the CLI's explicit `--restore-database`.
 */
export function RollbackAction({
  app,
  org,
  project,
  serving,
  fallbackTarget,
  protectionNote,
  onDone,
}: {
  app: SectionProps['app'];
  org: string;
  project: string;
  serving: Deployment;
  fallbackTarget: Deployment | undefined;
  protectionNote: string | null | undefined;
  onDone: () => void;
}) {
  const path = { application_id: app.id };
  const environment = serving.environment;
  const preview = useLoad(
    () => ok(api.GET('/v1/applications/{application_id}/rollback/preview', { params: { path, query: { environment } } })),
    [app.id, serving.id],
  );
  const p = preview.data;
  const from = p?.serving ? `v${p.serving.version}` : `v${serving.release.version}`;
  const to = p ? (p.target ? `v${p.target.version}` : 'nothing (refused)') : fallbackTarget ? `v${fallbackTarget.release.version}` : '—';
  const offers = p?.restore_offers ?? [];
  const cli = `slipway rollback${p?.target ? ` v${p.target.version}` : ''} --restore-database --app ${org}/${project}/${app.slug}${
    environment === 'production' ? '' : ` --env ${environment}`
  }`;
  return (
    <ConfirmAction
      label="Roll back"
      icon="rollback"
      danger
      title={`Roll back ${app.name}`}
      environment={environment}
      changes={[
        { label: 'Release', from, to },
        ...offers.map((o) => ({
          label: `Database ${o.addon.name} (${o.variable})`,
          from: `migrated by v${o.release.version}`,
          to: `left as it is (restore point ${o.restore_point})`,
        })),
      ]}
      note={
        <>
          {p === undefined && !preview.error && 'Checking what the rollback would do… '}
          {preview.error && `The preview could not be loaded: ${preview.error}. `}
          The earlier release runs again as it was: its image and its configuration, no rebuild.
          {protectionNote ? ` ${protectionNote}` : ''}
          {offers.length > 0 && (
            <>
              {' '}
              Rolling back never restores data. To go back with the data too, roll back from the command line instead:{' '}
              <code class="wrap">{cli}</code>
            </>
          )}
        </>
      }
      blocked={p?.refusal ?? null}
      run={() =>
        ok(
          api.POST('/v1/applications/{application_id}/rollback', {
            params: { path },
            body: {
              environment,
              ...(p?.target ? { release_id: p.target.id } : fallbackTarget ? { release_id: fallbackTarget.release.id } : {}),
            },
          }),
        )
      }
      done="Rollback started."
      onDone={() => {
        preview.reload();
        onDone();
      }}
    />
  );
}
