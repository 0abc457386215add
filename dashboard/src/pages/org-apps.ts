import { send } from '../api.js';
import { useLoad } from '../hooks.js';

/** An application of the organization as the pickers need it (from GET /v1/overview). */
export interface OrganizationApp {
  id: string;
  name: string;
  project_slug: string;
}

/** The organization's applications, for the pickers of its sections (an alert rule's scope, a volume's new home). */
export function useOrganizationApps(org: string) {
  return useLoad(
    async () =>
      (await send<{ applications: OrganizationApp[] }>('GET', `/v1/overview?organization=${encodeURIComponent(org)}`)).applications
        .map((a) => ({ id: a.id, name: a.name, project_slug: a.project_slug }))
        .sort((a, b) => `${a.project_slug}/${a.name}`.localeCompare(`${b.project_slug}/${b.name}`)),
    [org],
  );
}
