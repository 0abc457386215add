import type { Paths } from '../../api.js';

export type Application =
  Paths['/v1/applications/{org_slug}/{project_slug}/{app_slug}']['get']['responses'][200]['content']['application/json'];
export type Deployment =
  Paths['/v1/applications/{application_id}/deployments']['get']['responses'][200]['content']['application/json']['items'][number];

/** What a section of the application page gets from the layout. */
export interface SectionProps {
  app: Application;
  org: string;
  project: string;
  reloadApp: () => void;
}
