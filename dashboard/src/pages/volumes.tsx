import { useState } from 'preact/hooks';
import { api, ok, type Schemas } from '../api.js';
import { ConfirmAction } from '../components/confirm.js';
import { Loading, when } from '../components/ui.js';
import { useLoad } from '../hooks.js';
import { useOrganizationApps, type OrganizationApp } from './org-apps.js';

type Volume = Schemas['Volume'];

const mib = (bytes: number) => `${Math.round(bytes / 1024 / 1024)} MiB`;

/**
 * Volumes whose application (or environment) was deleted: their data stays and counts in the
 * disk quota until an admin mounts them in another application of the organization or deletes them.
 */
export function VolumesSection({ org }: { org: string }) {
  const detached = useLoad(
    () => ok(api.GET('/v1/organizations/{org_slug}/volumes/detached', { params: { path: { org_slug: org } } })),
    [org],
  );
  const apps = useOrganizationApps(org);
  return (
    <section aria-labelledby="detached-h">
      <h2 id="detached-h">Volumes of deleted applications</h2>
      <p class="muted">Their data stays, and counts in the disk quota, until they are attached elsewhere or deleted.</p>
      <Loading state={detached} what="volumes" empty="No detached volumes: every volume belongs to an application.">
        {(list) => (
          <ul class="cards">
            {list.map((v) => (
              <DetachedVolume key={v.id} org={org} volume={v} apps={apps.data ?? []} onChanged={detached.reload} />
            ))}
          </ul>
        )}
      </Loading>
    </section>
  );
}

function DetachedVolume({
  org,
  volume: v,
  apps,
  onChanged,
}: {
  org: string;
  volume: Volume;
  apps: OrganizationApp[];
  onChanged: () => void;
}) {
  const params = { params: { path: { org_slug: org, volume_id: v.id } } };
  const [target, setTarget] = useState('');
  const chosen = apps.find((a) => a.id === target);
  const selectId = `attach-${v.id}`;
  return (
    <li data-volume={v.name}>
      <p>
        <strong>{v.name}</strong> <span class="muted">was mounted at</span> <code>{v.mount_path}</code>{' '}
        <span class="muted">({v.process_type})</span>
      </p>
      <p class="muted">
        {v.size_mib} MiB
        {v.usage ? ` · ${mib(v.usage.used_bytes)} of ${mib(v.usage.size_bytes)} used` : ' · usage unknown (not mounted on this machine)'} ·
        created {when(v.created)}
      </p>
      <div class="buttons">
        <label class="inline-label" for={selectId}>
          Attach {v.name} to
        </label>
        <select id={selectId} value={target} onChange={(e) => setTarget((e.currentTarget as HTMLSelectElement).value)}>
          <option value="">Choose an application</option>
          {apps.map((a) => (
            <option key={a.id} value={a.id}>
              {a.project_slug} / {a.name}
            </option>
          ))}
        </select>
        {chosen && (
          <ConfirmAction
            label="Attach"
            ariaLabel={`Attach ${v.name} to ${chosen.name}`}
            title={`Attach ${v.name} to ${chosen.name}`}
            environment="production"
            changes={[
              { label: 'Volume', from: 'detached', to: `mounted at ${v.mount_path} in ${chosen.project_slug} / ${chosen.name}` },
              { label: 'Files', to: `become ${chosen.name}'s; production, if it serves, is redeployed stop-then-start` },
            ]}
            run={() =>
              ok(
                api.POST('/v1/organizations/{org_slug}/volumes/detached/{volume_id}/attach', {
                  ...params,
                  body: { application_id: chosen.id },
                }),
              )
            }
            done="Attached."
            onDone={onChanged}
          />
        )}
        <ConfirmAction
          label="Delete"
          ariaLabel={`Delete volume ${v.name}`}
          danger
          title={`Delete the volume ${v.name}`}
          changes={[{ label: 'Data', from: `${v.size_mib} MiB kept`, to: 'deleted for good' }]}
          run={() => ok(api.DELETE('/v1/organizations/{org_slug}/volumes/detached/{volume_id}', params))}
          done="Deleted."
          onDone={onChanged}
        />
      </div>
    </li>
  );
}
