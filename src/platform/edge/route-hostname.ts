/** The names an application environment is reached by on the platform domain. */
export interface RouteNames {
  appSlug: string;
  envSlug: string;
  projectSlug: string;
  orgSlug: string;
  isProduction: boolean;
}

/** `{app}.{project}.{org}.<domain>`; other environments than production add `{env}` after the app. */
export function routeHostname(t: RouteNames, domain: string): string {
  const parts = t.isProduction ? [t.appSlug, t.projectSlug, t.orgSlug] : [t.appSlug, t.envSlug, t.projectSlug, t.orgSlug];
  return [...parts, domain].join('.').toLowerCase();
}
