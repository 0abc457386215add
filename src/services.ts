import { join } from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import { sql } from 'kysely';
import type { AppContext } from './platform/context.js';
import type { Db } from './platform/db/database.js';
import type { JobPorts } from './platform/jobs/index.js';
import { createRepositories, type Repositories } from './repositories.js';
import { SourceBuilder } from './platform/builder/index.js';
import { createBuildSandbox } from './platform/sandbox/index.js';
import { vetRepositoryChange } from './platform/git/trusted-sources.js';
import { createBuildahBuilder } from './platform/builder/buildah.js';
import { SigningKeys } from './platform/crypto/signing-key.js';
import { AuthService } from './modules/auth/index.js';
import { ApplicationsService } from './modules/applications/index.js';
import { ConfigurationsService, ScopedConfig } from './modules/configurations/index.js';
import { UsersService } from './modules/users/index.js';
import { OrganizationAccess, OrganizationsService } from './modules/organizations/index.js';
import { WorkspaceScope, WorkspacesService } from './modules/workspaces/index.js';
import { TeamsService } from './modules/teams/index.js';
import { ProjectsService } from './modules/projects/index.js';
import { RegistryTokenService } from './modules/registry/index.js';
import { imageRecords, ImagesService } from './pipeline/index.js';
import { StorageService } from './modules/storage/index.js';
import { ReleasePromoter, ReleasesService } from './pipeline/index.js';
import { GithubHooksService, GitHubDeploymentReports, GitHubInstallationsService } from './modules/github/index.js';
import { PreviewsService, PreviewStatuses } from './modules/previews/index.js';
import { sweepDeletedEnvironments } from './modules/environments/index.js';
import { GitHubApp } from './platform/github/github-app.js';
import { GitHubApi } from './platform/github/github-api.js';
import { GitHubSetupFlow } from './platform/github/setup-flow.js';
import { routeHostname } from './platform/edge/route-hostname.js';
import { routeUrl } from './platform/runtime/local/instance-plan.js';
import { latestRecordsSource } from './pipeline/index.js';
import { PipelineService } from './pipeline/index.js';
import { EnvironmentsService, reachOfScope, requireProtectedEnvironmentAdmin } from './modules/environments/index.js';
import { EnvDeploysService } from './pipeline/index.js';
import { EnvironmentPipeline } from './pipeline/index.js';
import { DeploymentsService, queueReconcileOfDeployed, reconcileAfterScale } from './pipeline/index.js';
import { registerDeploymentJobs } from './pipeline/index.js';
import { DeployChain } from './pipeline/index.js';
import { ObservabilityService } from './modules/observability/index.js';
import { GuardsService, GuardWatcher } from './modules/guards/index.js';
import { PlatformMetrics } from './modules/metrics/index.js';
import { AcmeIssuer, DomainsService } from './modules/domains/index.js';
import { EdgeDirectory, foldOldRequestStats } from './platform/edge/index.js';
import { LocalRuntime } from './platform/runtime/local/local-runtime.js';
import { Notifications } from './platform/db/notifications.js';
import { StreamsService } from './modules/streams/index.js';
import { OneOffRunsService } from './pipeline/index.js';
import { AuditService } from './modules/audit/index.js';
import { WebhookDeliveries, WebhooksService } from './modules/webhooks/index.js';
import { WEBHOOKS_CHANNEL } from './platform/webhook-events.js';
import { forbidden } from './platform/errors.js';
import { Autoscaler, AutoscalingService } from './modules/autoscaling/index.js';
import { CronScheduler, CronService } from './modules/cron/index.js';
import { AppLogWriter, AppLogsService, oldestLiveWorker, servingReleaseScrubber, sweepAppLogs } from './modules/app-logs/index.js';

/**
 * The composition root of the services: builds each once, wires their dependencies and
 * registers the pipeline's job kinds (so any process with jobs can run them).
 */
export function createServices(ctx: AppContext, log: FastifyBaseLogger) {
  ctx.jobs?.setPorts(jobPorts(ctx.db));
  const repos = createRepositories(ctx.db);
  const { users, auth, organizations, workspaceScope, projects, access, config, apps } = createCoreServices(ctx, repos);
  ctx.jobs?.addSweeper(() => auth.pruneExpired());
  const deployments = new DeploymentsService(ctx, repos.deployments, apps);
  // Pipeline build stage: builders in order of preference (the source builder accepts anything).
  // A context with a Dockerfile goes to buildah (which says what to install when it is missing).
  // Both run a member's build steps in the application's sandbox (unless RUNTIME_ISOLATION=none).
  const buildSandbox = createBuildSandbox(ctx.config, ctx.db);
  const buildah = createBuildahBuilder(ctx.config, buildSandbox);
  // Disk use per organization, its quota (new builds refused over it) and garbage collection (issue 27, class 5).
  const storage = new StorageService(ctx, repos.storage, organizations, {
    defaultQuotaMb: ctx.config.ORG_DISK_QUOTA_MB,
    keepPerEnvironment: ctx.config.RELEASES_KEPT_PER_ENVIRONMENT,
    buildStorageRoot: ctx.config.BUILDAH_STORAGE_ROOT ?? join(ctx.config.dataDir, 'containers'),
    maxAgeMs: ctx.config.STORAGE_SWEEP_SECONDS * 1000,
    removeBuildImage: (applicationId, repositoryName, version) => buildah.removeImage(applicationId, repositoryName, version),
    logger: log.child({ component: 'storage' }),
  });
  ctx.jobs?.addSweeper(() => storage.sweep(), { everyMs: ctx.config.STORAGE_SWEEP_SECONDS * 1000 });
  // A deploy is what leaves older releases unreferenced: collect the application's at once.
  ctx.jobs?.afterJobs(async (data) => {
    if (data.kind === 'deploy' || data.kind === 'chain') await storage.afterDeploy(data.applicationId);
  });
  const images = new ImagesService(
    ctx,
    repos.images,
    apps,
    config,
    [buildah, new SourceBuilder(join(ctx.config.dataDir, 'cache'), buildSandbox)],
    (applicationId) => storage.requireBuildRoom(applicationId),
  );
  if (ctx.jobs) images.registerJobs(ctx.jobs);
  const imageSource = imageRecords(repos.images);
  const releases = new ReleasesService(ctx, repos.releases, imageSource, apps, config);
  if (ctx.jobs) releases.registerJobs(ctx.jobs);
  const runtimeLog = log.child({ component: 'runtime' });
  registerDeploymentJobs(ctx, { deployments: repos.deployments, runs: repos.oneOffRuns }, runtimeLog);
  (ctx.runtimeStartTasks ??= []).push(() => queueReconcileOfDeployed(ctx, repos.deployments));
  // `POST /applications/{id}/deploy` (and GitHub pushes): build → release → deploy as one job.
  const deployChain = new DeployChain(ctx, repos.deployments, apps, images, releases);
  deployChain.registerJobs(runtimeLog);

  // Guarded rollouts: processes that run jobs judge the deployments under watch (and queue the rollbacks).
  const guardWatcher = ctx.jobs
    ? new GuardWatcher(ctx.db, repos.guards, deployments, ctx.config.GUARD_CHECK_MS, log.child({ component: 'guard' }))
    : null;
  guardWatcher?.start();

  // Custom domains: served by this process's edge (the local runtime's router), certificates by ACME.
  const edgeDirectory = ctx.runtime instanceof LocalRuntime ? new EdgeDirectory(ctx.db, ctx.secrets) : null;
  if (edgeDirectory) {
    const edge = (ctx.runtime as LocalRuntime).runtimeService.router;
    edge.useDirectory(edgeDirectory);
    edge.useLogger(log.child({ component: 'edge' }));
  }
  // With Caddy's own ACME (EDGE_CERTIFICATES=caddy) the platform requests no certificates itself.
  const caddyIssues = ctx.config.EDGE_DRIVER === 'caddy' && ctx.config.EDGE_CERTIFICATES === 'caddy';
  const acme =
    ctx.config.ACME_DIRECTORY_URL && !caddyIssues
      ? new AcmeIssuer(
          { directoryUrl: ctx.config.ACME_DIRECTORY_URL, email: ctx.config.ACME_EMAIL, caFile: ctx.config.ACME_CA_FILE },
          repos.domains,
          ctx.secrets,
        )
      : null;
  const domains = new DomainsService(
    ctx.db,
    repos.domains,
    ctx.secrets,
    apps,
    deployments,
    {
      routerDomain: ctx.config.ROUTER_DOMAIN,
      ownership: { dnsServer: ctx.config.DOMAIN_DNS_SERVER },
      renewDays: ctx.config.ACME_RENEW_DAYS,
    },
    acme,
    async (applicationId) => {
      await edgeDirectory?.refresh();
      // On a cluster the names are Ingress hosts: a reconcile re-applies the Ingress.
      if (applicationId && ctx.config.RUNTIME === 'kubernetes') await deployments.scaled(applicationId);
    },
    log.child({ component: 'domains' }),
  );
  ctx.jobs?.addSweeper(() => domains.renewDue());
  // The edge's per-minute counters: old minutes folded into totals, hourly (it only keeps the table from growing).
  ctx.jobs?.addSweeper(() => foldOldRequestStats(ctx.db), { everyMs: 3_600_000 });

  // Application logs: the output of the instances this process runs (or follows on a cluster), rotated by size and age.
  if (ctx.runtime) {
    const shared = ctx.runtime.sharedWorkloads;
    const writer = new AppLogWriter(ctx.db, repos.appLogs, {
      maxBytesPerApp: ctx.config.APP_LOG_MAX_BYTES_PER_APP,
      logger: runtimeLog,
      ...(shared
        ? {
            scrub: servingReleaseScrubber(ctx),
            shouldStore: oldestLiveWorker(ctx, (err) => runtimeLog.warn({ err }, 'application log leader check failed')),
          }
        : {}),
    });
    ctx.runtime.onInstanceOutput((line) => writer.accept(line));
    ctx.runtime.onShutdown(() => writer.flush());
  }
  ctx.jobs?.addSweeper(() => sweepAppLogs(repos.appLogs, ctx.config.APP_LOG_RETENTION_HOURS, ctx.config.APP_LOG_MAX_BYTES_PER_APP));

  // One LISTEN connection per process: live streams learn of changes any process writes.
  const streamsLog = log.child({ component: 'streams' });
  const notifications = new Notifications(ctx.databaseUrl ?? ctx.config.DATABASE_URL ?? '', (err) =>
    streamsLog.warn({ err }, 'notification connection lost'),
  );
  auth.followCredentialChanges(notifications).catch((err: unknown) => {
    // Without the LISTEN connection cached credentials still expire after CREDENTIAL_CACHE_SECONDS.
    log.warn({ err }, 'credential changes are not followed: revocations take effect after the cache TTL');
  });
  const streams = new StreamsService(
    ctx.db,
    repos.streams,
    notifications,
    (userId, applicationId) => apps.authorize(userId, applicationId),
    (err) => streamsLog.error({ err }, 'stream failed'),
  );

  // Audit log and webhooks are managed by an organization's admins.
  const requireOrganizationAdmin = async (userId: string, slug: string) => {
    const { org, membership } = await organizations.resolve(userId, slug);
    if (!membership.admin) throw forbidden('Only organization admins can do this');
    return org;
  };

  // Outbound webhooks: the outbox is fanned out into durable delivery jobs wherever the job store is open.
  const webhooksLog = log.child({ component: 'webhooks' });
  const webhookDeliveries = ctx.jobs ? new WebhookDeliveries(ctx.db, repos.webhooks, ctx.secrets, ctx.jobs, ctx.config, webhooksLog) : null;
  if (webhookDeliveries) {
    const deliveries = webhookDeliveries;
    void deliveries
      .register()
      // On the process's one LISTEN connection; a reconnect (null) may have lost a wake-up: drain then too.
      .then(() => notifications.subscribeChannel(WEBHOOKS_CHANNEL, () => void deliveries.drain()))
      .then(() => deliveries.drain())
      .catch((err) => webhooksLog.error({ err }, 'starting webhook deliveries failed'));
    ctx.jobs?.addSweeper(() => deliveries.drain());
  }

  // Previews (issue 16) and GitHub reporting: commit statuses and the Deployments API, told by the chain.
  const github = new GitHubApi(ctx.config, new GitHubApp(ctx.config));
  const urlOf = (hostname: string) =>
    ctx.runtime instanceof LocalRuntime ? routeUrl(hostname, ctx.runtime.router.port) : `http://${hostname}`;
  const deploymentTargets = repos.deployments;
  const previews = new PreviewsService(
    ctx.db,
    repos.previews,
    ctx.jobs,
    (id, ref, environmentId) => deployChain.start(id, ref, environmentId),
    {
      routerDomain: ctx.config.ROUTER_DOMAIN,
      urlOf,
    },
    workspaceScope,
  );
  deployChain.observe(
    new PreviewStatuses(ctx.db, repos.previews, github, async (applicationId, environmentId) => {
      const target = await deploymentTargets.target(applicationId, environmentId);
      return target ? urlOf(routeHostname(target, ctx.config.ROUTER_DOMAIN)) : null;
    }),
  );
  deployChain.observe(new GitHubDeploymentReports(ctx.db, github));
  ctx.jobs?.addSweeper(async () => {
    await sweepDeletedEnvironments(ctx.db, ctx.config.PREVIEW_RETENTION_HOURS);
  });
  const runs = new OneOffRunsService(ctx, repos.oneOffRuns, repos.deployments, apps);
  // Autoscaling: evaluated with every metrics sample of a process that runs applications.
  if (ctx.runtime) {
    const autoscaler = new Autoscaler(ctx.db, repos.autoscaling, ctx.jobs, ctx.config.OBSERVABILITY_SAMPLE_SECONDS, runtimeLog);
    (ctx.usageListeners ??= []).push((usage, sampledAt) => autoscaler.evaluate(usage, sampledAt));
  }
  // Scheduled jobs: started by every process that runs pipeline workers (each occurrence is taken once).
  const cronScheduler =
    ctx.jobs && ctx.runtime
      ? new CronScheduler(
          ctx.db,
          repos.cron,
          runs,
          { pollMs: ctx.config.CRON_POLL_MS, allowSeconds: ctx.config.CRON_SECONDS_FIELD },
          log.child({ component: 'cron' }),
        )
      : null;
  cronScheduler?.start();

  const signingKeys = SigningKeys.forConfig(ctx.config);
  return {
    audit: new AuditService(ctx.db, repos.audit, requireOrganizationAdmin),
    webhooks: new WebhooksService(
      ctx.db,
      repos.webhooks,
      ctx.secrets,
      requireOrganizationAdmin,
      { allowPrivate: ctx.config.WEBHOOK_ALLOW_PRIVATE },
      webhookDeliveries,
    ),
    guardWatcher,
    guards: new GuardsService(ctx.db, repos.guards, apps),
    metrics: new PlatformMetrics(ctx.db),
    notifications,
    previews,
    streams,
    runs,
    cronScheduler,
    cron: new CronService(ctx.db, repos.cron, apps, runs, ctx.config.CRON_SECONDS_FIELD),
    autoscaling: new AutoscalingService(ctx.db, repos.autoscaling, apps),
    appLogs: new AppLogsService(ctx.db, repos.appLogs, apps, notifications),
    auth,
    config,
    apps,
    deployments,
    images,
    releases,
    deployChain,
    domains,
    pipeline: new PipelineService(ctx.db, apps),
    githubInstallations: new GitHubInstallationsService(ctx.db, new GitHubSetupFlow(ctx.config, ctx.secrets), {
      async resolve(userId, slug) {
        const { org, membership } = await organizations.resolve(userId, slug);
        return { id: org.id, slug: org.slug, admin: membership.admin };
      },
      findBySlug: (slug) => access.findBySlug(slug),
      isAdmin: (userId, organizationId) =>
        access.requireAdmin(userId, organizationId).then(
          () => true,
          () => false,
        ),
      slugOf: async (organizationId) => (await access.findById(organizationId))?.slug,
    }),
    githubHooks: new GithubHooksService(ctx, (id, ref, environmentId) => deployChain.start(id, ref, environmentId), {
      pullRequest: (event) => previews.pullRequest(event),
    }),
    envDeploys: new EnvDeploysService(
      ctx.db,
      repos.envDeploys,
      new EnvironmentPipeline(ctx, deployChain, deployments, new ReleasePromoter(ctx, repos.releases, imageSource, config)),
      workspaceScope,
      log.child({ component: 'env-deploys' }),
    ),
    signingKeys,
    registryTokens: new RegistryTokenService(ctx, repos.registry, signingKeys, auth),
    users,
    organizations,
    workspaces: new WorkspacesService(ctx.db, repos.workspaces, organizations, workspaceScope),
    teams: new TeamsService(repos.teams, users, workspaceScope, access),
    projects,
    environments: new EnvironmentsService(ctx.db, repos.environments, workspaceScope, config, ctx.jobs),
    // The configuration layers of workspaces, teams and environments, behind their own routes.
    scopedConfig: new ScopedConfig(ctx.db, repos.configurations, config),
    observability: new ObservabilityService(ctx.db, apps),
    storage,
  };
}

/**
 * The services every feature builds on: identity, organizations and their access rule,
 * projects, configuration and applications. Also what a process that runs only some
 * pipeline stages (a test's worker process) needs.
 */
export function createCoreServices(ctx: AppContext, repos: Repositories = createRepositories(ctx.db)) {
  // Identity: users, organizations (workspaces) and the workspace scope the feature services resolve through.
  const { users, auth } = createIdentity(ctx, repos);
  const access = new OrganizationAccess(repos.organizations);
  const organizations = new OrganizationsService(repos.organizations, users, access, { orgsPerUserMax: ctx.config.ORGS_PER_USER_MAX });
  const workspaceScope = new WorkspaceScope(ctx.db, organizations, access);
  const projects = new ProjectsService(repos.projects, access);
  const config = new ConfigurationsService(
    ctx.db,
    repos.configurations,
    ctx.secrets,
    { variables: ctx.config.CONFIG_MAX_VARIABLES_PER_SCOPE, bytes: ctx.config.CONFIG_MAX_BYTES_PER_SCOPE },
    // A write to any scope a protected environment inherits needs an organization admin.
    (userId, scope) =>
      requireProtectedEnvironmentAdmin(ctx.db, userId, reachOfScope(scope), `the configuration it inherits (${scope.scope} scope)`),
    async (userId, organizationId) => (await access.requireMember(userId, organizationId)).admin,
  );
  const apps = new ApplicationsService(
    ctx.db,
    repos.applications,
    projects,
    latestRecordsSource(ctx.db),
    // A scale reaches running instances through the deployments module (a queued `reconcile`):
    // a port the applications module owns, so it needs nothing above it.
    reconcileAfterScale(ctx, repos.deployments),
    (change) => vetRepositoryChange(ctx.db, ctx.config, change),
  );
  return { users, auth, access, organizations, workspaceScope, projects, config, apps };
}

/** Users and sign-in: the API's, and the command line's and first start's (which build no other service). */
export function createIdentity(ctx: AppContext, repos: Pick<Repositories, 'users' | 'auth'> = createRepositories(ctx.db)) {
  const users = new UsersService(repos.users);
  return { users, auth: new AuthService(ctx, repos.auth, users) };
}

/** What the job loop reads about applications (it never reads the modules' tables itself). */
function jobPorts(db: Db): JobPorts {
  return {
    async budgetOf(applicationId) {
      const row = await db
        .selectFrom('applications')
        .innerJoin('projects', 'projects.id', 'applications.project_id')
        .innerJoin('organizations', 'organizations.id', 'projects.organization_id')
        .select(['projects.organization_id', 'organizations.created_by'])
        .where('applications.id', '=', applicationId)
        .executeTakeFirst();
      return row ? { organizationId: row.organization_id, ownerId: row.created_by ?? row.organization_id } : null;
    },
    async applicationsHeldElsewhere(workerId, freshSeconds) {
      const rows = await db
        .selectFrom('instances')
        .innerJoin('workers', 'workers.id', 'instances.worker_id')
        .select('instances.application_id')
        .distinct()
        .where('workers.id', '<>', workerId)
        .where('workers.stopped_at', 'is', null)
        .where('workers.heartbeat_at', '>', sql<Date>`now() - make_interval(secs => ${freshSeconds})`)
        .execute();
      return rows.map((r) => r.application_id);
    },
  };
}
