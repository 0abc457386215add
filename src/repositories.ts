import type { Db } from './platform/db/database.js';
import { ApplicationsRepository } from './modules/applications/index.js';
import { AppLogsRepository } from './modules/app-logs/index.js';
import { AuditRepository } from './modules/audit/index.js';
import { AuthRepository } from './modules/auth/index.js';
import { SsoRepository } from './modules/sso/index.js';
import { AutoscalingRepository } from './modules/autoscaling/index.js';
import { ConfigurationsRepository } from './modules/configurations/index.js';
import { CronRepository } from './modules/cron/index.js';
import { ExecSessionsRepository } from './modules/instance-exec/index.js';
import { SshKeysRepository } from './modules/ssh-keys/index.js';
import { DeploymentsRepository, OneOffRunsRepository } from './pipeline/index.js';
import { DomainsRepository } from './modules/domains/index.js';
import { AddonsRepository } from './modules/addons/index.js';
import { VolumesRepository } from './modules/volumes/index.js';
import { ComposeImportsRepository } from './modules/compose/index.js';
import { EnvironmentsRepository } from './modules/environments/index.js';
import { EnvDeploysRepository } from './pipeline/index.js';
import { GuardsRepository } from './modules/guards/index.js';
import { AlertsRepository } from './modules/alerts/index.js';
import { ImagesRepository } from './pipeline/index.js';
import { StorageRepository } from './modules/storage/index.js';
import { OrganizationsRepository } from './modules/organizations/index.js';
import { PreviewsRepository } from './modules/previews/index.js';
import { ProjectsRepository } from './modules/projects/index.js';
import { RegistryRepository } from './modules/registry/index.js';
import { ReleasesRepository } from './pipeline/index.js';
import { StreamsRepository } from './modules/streams/index.js';
import { TeamsRepository } from './modules/teams/index.js';
import { UsersRepository } from './modules/users/index.js';
import { WebhooksRepository } from './modules/webhooks/index.js';
import { NotificationsRepository } from './modules/notifications/index.js';
import { LogDrainsRepository } from './modules/log-drains/index.js';

/**
 * Every module's repository, built once per database. Only the composition root
 * (src/services.ts) and the command line's few direct operations use this; modules receive
 * the repositories they own through their constructors (a lint rule keeps it so).
 */
export function createRepositories(db: Db) {
  return {
    applications: new ApplicationsRepository(db),
    appLogs: new AppLogsRepository(db),
    audit: new AuditRepository(db),
    auth: new AuthRepository(db),
    sso: new SsoRepository(db),
    autoscaling: new AutoscalingRepository(db),
    configurations: new ConfigurationsRepository(db),
    cron: new CronRepository(db),
    execSessions: new ExecSessionsRepository(db),
    sshKeys: new SshKeysRepository(db),
    deployments: new DeploymentsRepository(db),
    domains: new DomainsRepository(db),
    addons: new AddonsRepository(db),
    volumes: new VolumesRepository(db),
    composeImports: new ComposeImportsRepository(db),
    envDeploys: new EnvDeploysRepository(db),
    environments: new EnvironmentsRepository(db),
    guards: new GuardsRepository(db),
    images: new ImagesRepository(db),
    oneOffRuns: new OneOffRunsRepository(db),
    organizations: new OrganizationsRepository(db),
    previews: new PreviewsRepository(db),
    projects: new ProjectsRepository(db),
    registry: new RegistryRepository(db),
    releases: new ReleasesRepository(db),
    storage: new StorageRepository(db),
    streams: new StreamsRepository(db),
    teams: new TeamsRepository(db),
    users: new UsersRepository(db),
    webhooks: new WebhooksRepository(db),
    notificationChannels: new NotificationsRepository(db),
    logDrains: new LogDrainsRepository(db),
    alerts: new AlertsRepository(db),
  };
}

export type Repositories = ReturnType<typeof createRepositories>;
