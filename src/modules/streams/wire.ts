import type { Db } from '../../platform/db/database.js';
import type { Notifications } from '../../platform/db/notifications.js';
import type { PlatformLogger, Wired } from '../../platform/wiring.js';
import type { StreamsRepository } from './streams.repository.js';
import { streamsRoutes, type AuthorizeEnvironmentDeploy } from './streams.routes.js';
import { StreamsService } from './streams.service.js';

/** Live streams of records' logs and events, woken by the process's one LISTEN connection. */
export function wireStreams(deps: {
  db: Db;
  repository: StreamsRepository;
  notifications: Notifications;
  authorizeApplication: (userId: string, applicationId: string) => Promise<unknown>;
  authorizeEnvDeploy: AuthorizeEnvironmentDeploy;
  log: PlatformLogger;
}) {
  const log = deps.log.child({ component: 'streams' });
  const streams = new StreamsService(deps.db, deps.repository, deps.notifications, deps.authorizeApplication, (err) =>
    log.error({ err }, 'stream failed'),
  );
  return { streams, routes: [streamsRoutes(streams, deps.authorizeEnvDeploy)] } satisfies Wired;
}
