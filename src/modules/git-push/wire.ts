import type { Wired } from '../../platform/wiring.js';
import { gitPushRoutes, gitRemoteRoutes } from './git-push.routes.js';
import { GitPushService, type GitPushDeps } from './git-push.service.js';

/** `git push` to an application (issue 34): smart HTTP outside /v1, its settings inside. */
export function wireGitPush(deps: GitPushDeps) {
  const gitPush = new GitPushService(deps);
  return { gitPush, routes: [gitRemoteRoutes(gitPush)], rootRoutes: [gitPushRoutes(gitPush)] } satisfies Wired;
}
