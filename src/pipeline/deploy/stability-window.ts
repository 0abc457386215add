import type { Config } from '../../config.js';

/**
 * How long new instances must keep running once healthy, and why, for the deployment log.
 * The application's own `stability_window` always wins. Otherwise an environment's first
 * deployment (nothing serving: no previous release to keep, and it is routed at once) gets the
 * shorter `DEPLOY_FIRST_STABILITY_WINDOW_SECONDS`: long enough to fail, with its exit and last
 * lines, an app that dies right after its first answer, without making a newcomer's first
 * `deploy --wait` sit through the full window meant to protect a serving release.
 */
export function stabilityWindow(
  applicationWindow: number | null,
  firstInEnvironment: boolean,
  config: Pick<Config, 'DEPLOY_STABILITY_WINDOW_SECONDS' | 'DEPLOY_FIRST_STABILITY_WINDOW_SECONDS'>,
): { seconds: number; why: string } {
  if (applicationWindow !== null) return { seconds: applicationWindow, why: "the application's stability_window" };
  if (firstInEnvironment && config.DEPLOY_FIRST_STABILITY_WINDOW_SECONDS < config.DEPLOY_STABILITY_WINDOW_SECONDS)
    return {
      seconds: config.DEPLOY_FIRST_STABILITY_WINDOW_SECONDS,
      why: 'first deployment here, nothing to fall back to (DEPLOY_FIRST_STABILITY_WINDOW_SECONDS)',
    };
  return { seconds: config.DEPLOY_STABILITY_WINDOW_SECONDS, why: 'DEPLOY_STABILITY_WINDOW_SECONDS' };
}
