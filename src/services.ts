import { join } from 'node:path';
import type { AppContext } from './platform/context.js';
import { createRepositories, type Repositories } from './repositories.js';
import type { PlatformLogger, Routes, Sweeper } from './platform/wiring.js';
import { SourceBuilder } from './platform/builder/index.js';
import { createBuildSandbox } from './platform/sandbox/index.js';
import { vetRepositoryChange, vetRepositoryFor } from './platform/git/trusted-sources.js';
import { createBuildahBuilder } from './platform/builder/buildah.js';
import { GitHubApp } from './platform/github/github-app.js';
import { GitHubApi } from './platform/github/github-api.js';
import { routeHostname } from './platform/edge/route-hostname.js';
import { routeUrl } from './platform/runtime/local/instance-plan.js';
import { EdgeDirectory } from './platform/edge/edge-directory.js';
import { foldOldRequestStats } from './platform/edge/request-stats.js';
import { LocalRuntime } from './platform/runtime/local/local-runtime.js';
import { Notifications } from './platform/db/notifications.js';
import type { AppUsage } from './platform/runtime/application-runtime.js';
import { forbidden } from './platform/errors.js';
import { wireUsers } from './modules/users/index.js';
import { wireAuth } from './modules/auth/index.js';
import { wireSso } from './modules/sso/index.js';
import { mailInvitations, wireOrganizations } from './modules/organizations/index.js';
import { createMailer, mailErrorText } from './platform/mail/mailer.js';
import { wireProjects } from './modules/projects/index.js';
import { wireApplications } from './modules/applications/index.js';
import { wireConfigurations } from './modules/configurations/index.js';
import { wireTeams } from './modules/teams/index.js';
import { wireHealth } from './modules/health/index.js';
import { wireStorage } from './modules/storage/index.js';
import { applicationDetailSource, latestRecordsSource, reconcileAfterScale, wirePipeline } from './pipeline/index.js';
import { imagesRoutes } from './modules/images/index.js';
import { releasesRoutes } from './modules/releases/index.js';
import { applicationDeleteRoutes, deploymentsRoutes, oneOffRunsRoutes } from './modules/deployments/index.js';
import { envDeploysRoutes } from './modules/env-deploys/index.js';
import { pipelineRoutes } from './modules/pipeline-status/index.js';
import { reachOfScope, requireProtectedEnvironmentAdmin, wireEnvironments } from './modules/environments/index.js';
import { wirePreviews } from './modules/previews/index.js';
import { wireGithub } from './modules/github/index.js';
import { wireRegistry } from './modules/registry/index.js';
import { wireGitPush } from './modules/git-push/index.js';
import { wireObservability } from './modules/observability/index.js';
import { wireOverview } from './modules/overview/index.js';
import { wireGuards } from './modules/guards/index.js';
import { wireAlerts } from './modules/alerts/index.js';
import { wireDomains } from './modules/domains/index.js';
import { wireAddons } from './modules/addons/index.js';
import { wireVolumes } from './modules/volumes/index.js';
import { wireCron } from './modules/cron/index.js';
import { wireInstanceExec } from './modules/instance-exec/index.js';
import { wireSshKeys } from './modules/ssh-keys/index.js';
import { wireSshGateway } from './modules/ssh-gateway/index.js';
import { wireAutoscaling } from './modules/autoscaling/index.js';
import { wireAppLogs } from './modules/app-logs/index.js';
import { wireStreams } from './modules/streams/index.js';
import { wireAudit } from './modules/audit/index.js';
import { wireWebhooks } from './modules/webhooks/index.js';
import { wireNotifications } from './modules/notifications/index.js';
import { wireLogDrains } from './modules/log-drains/index.js';
import { wireMetrics } from './modules/metrics/index.js';
import { wireAncla } from './adapters/ancla/index.js';
import { wireCompose } from './modules/compose/index.js';

/**
 * The composition root: builds every service once, in dependency order, from each module's
 * `wire()`, and chooses the drivers behind the ports. It only builds: no timer, no
 * connection, no listener. What runs in the background is returned in `background` and
 * started by `start()` (src/lifecycle.ts); the HTTP app (src/app.ts) registers `routes`.
 */
export function composePlatform(given: AppContext, log: PlatformLogger) {
  // Work outside a request (builds, deploys) logs here unless the process gave its own logger.
  const ctx: AppContext = given.logger ? given : { ...given, logger: log.child({ component: 'pipeline' }) };
  const { config } = ctx;
  const repos = createRepositories(ctx.db);
  const drivers = chooseDrivers(ctx);
  drivers.localEdge?.useLogger(log.child({ component: 'edge' }));

  const core = composeCore(ctx, repos);
  const { users, auth, access, organizations, organizationScope, projects, configurations, applications } = core;
  const { config: configs, scopedConfig } = configurations;
  const { apps } = applications;
  const sso = wireSso({ ctx, repository: repos.sso, access });

  // The pipeline: build → release → deploy, the chain that runs them, environments' deploys.
  const storage = wireStorage({
    ctx,
    repository: repos.storage,
    organizations,
    buildStorageRoot: config.BUILDAH_STORAGE_ROOT ?? join(config.dataDir, 'containers'),
    removeBuildImage: (applicationId, repositoryName, version) => drivers.buildah.removeImage(applicationId, repositoryName, version),
    log,
  });
  const pipeline = wirePipeline({
    ctx,
    repositories: repos,
    apps,
    config: configs,
    organizationScope,
    builders: drivers.builders,
    requireBuildRoom: (applicationId) => storage.storage.requireBuildRoom(applicationId),
    log,
  });
  const { deployChain, deployments } = pipeline;
  const environments = wireEnvironments({
    ctx,
    repository: repos.environments,
    organizationScope,
    config: configs,
    edgeChanged: async () => void (await drivers.edgeDirectory?.refresh()),
  });

  // A firing alert rule of the environment counts as a regression during a guarded deployment's watch.
  const guards = wireGuards({
    ctx,
    repository: repos.guards,
    apps,
    deployments,
    log,
    alertFiredSince: (a, e, s) => repos.alerts.firedSince(a, e, s),
  });
  const domains = wireDomains({
    ctx,
    repository: repos.domains,
    apps,
    deployments,
    requestsCertificates: !drivers.edgeIssuesCertificates,
    async namesChanged(applicationId) {
      await drivers.edgeDirectory?.refresh();
      if (applicationId && drivers.namesAreIngressHosts) await deployments.scaled(applicationId);
    },
    log,
  });

  const addons = wireAddons({
    ctx,
    repository: repos.addons,
    scope: organizationScope,
    apps,
    releases: pipeline.releases,
    deployments,
    log,
  });
  const volumes = wireVolumes({
    ctx,
    repository: repos.volumes,
    apps,
    scope: organizationScope,
    deployments,
    requireRoom: (organizationId, bytes) => storage.storage.requireVolumeRoom(organizationId, bytes),
  });

  // One LISTEN connection per process (opened at the first subscription, by start() or a stream).
  const notifications = new Notifications(ctx.databaseUrl ?? config.DATABASE_URL ?? '', (err) =>
    log.child({ component: 'streams' }).warn({ err }, 'notification connection lost'),
  );
  const appLogs = wireAppLogs({ ctx, repository: repos.appLogs, apps, notifications, log });
  const streams = wireStreams({
    db: ctx.db,
    repository: repos.streams,
    notifications,
    authorizeApplication: (userId, applicationId) => apps.authorize(userId, applicationId),
    authorizeEnvDeploy: (userId, p) => pipeline.envDeploys.detail(userId, p.workspace, p.project, p.env, p.deploy_id),
    log,
  });

  // Audit log and webhooks are managed by an organization's admins.
  const requireOrganizationAdmin = async (userId: string, slug: string) => {
    const { org, membership } = await organizations.resolve(userId, slug);
    if (!membership.admin) throw forbidden('Only organization admins can do this');
    return org;
  };
  const audit = wireAudit({ db: ctx.db, repository: repos.audit, requireOrganizationAdmin });
  const webhooks = wireWebhooks({ ctx, repository: repos.webhooks, notifications, requireOrganizationAdmin, log });
  // Slack and Discord channels (issue 33) read the webhook outbox through the webhook dispatcher.
  const notificationChannels = wireNotifications({
    ctx,
    repository: repos.notificationChannels,
    webhookDeliveries: webhooks.deliveries,
    requireOrganizationAdmin,
    log,
  });
  // Log drains (issue 33): runtime, build and deploy logs shipped to syslog, HTTPS or OTLP receivers.
  const logDrains = wireLogDrains({ ctx, repository: repos.logDrains, requireOrganizationAdmin, log });
  const alerts = wireAlerts({ ctx, repository: repos.alerts, requireOrganizationAdmin, log, logLeader: appLogs.leaderCheck });

  // Previews (issue 16) and GitHub reporting: commit statuses and the Deployments API, told by the chain.
  const github = new GitHubApi(config, new GitHubApp(config));
  const previews = wirePreviews({
    ctx,
    repository: repos.previews,
    deployChain,
    github,
    organizationScope,
    urlOf: drivers.urlOf,
    async servedUrl(applicationId, environmentId) {
      const target = await repos.deployments.target(applicationId, environmentId);
      return target ? drivers.urlOf(routeHostname(target, config.ROUTER_DOMAIN)) : null;
    },
  });
  const githubArea = wireGithub({
    ctx,
    deployChain,
    github,
    handlers: { pullRequest: (event) => previews.previews.pullRequest(event) },
    organizations: {
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
    },
  });

  const autoscaling = wireAutoscaling({ ctx, repository: repos.autoscaling, apps, log });
  const usageListeners: Array<(usage: AppUsage[], sampledAt: Date) => Promise<unknown>> = [];
  const autoscaler = autoscaling.autoscaler;
  if (autoscaler) usageListeners.push((usage, sampledAt) => autoscaler.evaluate(usage, sampledAt));
  const observability = wireObservability({ ctx, apps, usageListeners, log });
  const cron = wireCron({ ctx, repository: repos.cron, apps, runs: pipeline.runs, log });
  const instanceExec = wireInstanceExec({ ctx, repository: repos.execSessions, apps });
  const registry = wireRegistry({ ctx, repository: repos.registry, auth: auth.auth });
  // The API's workspace routes: organizations and projects under Ancla's words.
  const teams = wireTeams({ repository: repos.teams, users: users.users, organizationScope, access });
  const ancla = wireAncla({
    organizations,
    organizationScope,
    projects,
    scopedConfig,
    config: configs,
    apps,
    environments: environments.environments,
    teams: teams.teams,
    observability: observability.observability,
    addons: addons.addons,
    exec: { service: instanceExec.exec, ssh: { port: config.SSH_PORT, host: config.SSH_HOST } },
    pipeline: {
      images: pipeline.images,
      deployments,
      releases: pipeline.releases,
      envDeploys: pipeline.envDeploys,
      status: pipeline.status,
      removal: pipeline.removal,
    },
  });
  const metrics = wireMetrics({ db: ctx.db, token: config.METRICS_TOKEN, dataDir: config.dataDir });
  // `git push` deploys (issue 34): a pushed commit runs the same chain as a GitHub push.
  const gitPush = wireGitPush({
    ctx,
    auth: auth.auth,
    apps,
    startChain: (id, sha, environmentId) => deployChain.start(id, sha, environmentId, { pushed: true }),
    requireBuildRoom: (applicationId) => storage.storage.requireBuildRoom(applicationId, { fresh: true }),
    roomLeft: (applicationId) => storage.storage.roomLeft(applicationId),
  });

  // The SSH gateway (issues 29, 34): `git push` by registered key, Ancla's exec by one-use token.
  const sshKeys = wireSshKeys({ repository: repos.sshKeys });
  const { sshGateway } = wireSshGateway({
    config: { SSH_PORT: config.SSH_PORT, HOST: config.HOST, dataDir: config.dataDir },
    logger: log.child({ component: 'ssh' }),
    exec: instanceExec.exec,
    gitPush: gitPush.gitPush,
    sshKeys: sshKeys.sshKeys,
    applicationBySlugs: async (userId, org, project, app) =>
      (await organizationScope.application((await organizationScope.project(userId, org, project)).project.id, app)).id,
  });

  // `slipway compose import` (issue 34): a Compose file's services become applications and add-ons.
  const compose = wireCompose({
    settings: config,
    repository: repos.composeImports,
    projects,
    apps,
    config: configs,
    addons: addons.addons,
    volumes: volumes.volumes,
    deployer: {
      build: (userId, applicationId) => deployChain.request(userId, applicationId),
      image: (userId, applicationId, body) => pipeline.imageDeploys.request(userId, applicationId, body),
    },
    vetSource: (userId, repository) => vetRepositoryFor(ctx.db, ctx.config, userId, repository),
  });

  // The API's routes under /v1, in the order of its OpenAPI document.
  const routes: Routes[] = [
    auth,
    sso,
    users,
    { routes: core.organizationRoutes },
    { routes: core.projectRoutes },
    applications,
    configurations,
    wireHealth({ ctx }),
    { routes: [imagesRoutes(pipeline.images)] },
    storage,
    { routes: [releasesRoutes(pipeline.releases)] },
    { routes: [pipelineRoutes(pipeline.status)] },
    githubArea,
    ancla,
    teams,
    environments,
    { routes: [envDeploysRoutes(pipeline.envDeploys)] },
    previews,
    registry,
    { routes: [deploymentsRoutes(deployments, deployChain, pipeline.configRelease, pipeline.imageDeploys)] },
    { routes: [applicationDeleteRoutes(pipeline.removal, addons.addons)] },
    observability,
    wireOverview({ ctx, access }),
    guards,
    domains,
    addons,
    volumes,
    { routes: [oneOffRunsRoutes(pipeline.runs)] },
    cron,
    instanceExec,
    autoscaling,
    appLogs,
    streams,
    audit,
    webhooks,
    notificationChannels,
    logDrains,
    alerts,
    gitPush,
    sshKeys,
    compose,
  ].flatMap((wired) => wired.routes);

  // Maintenance the job workers run once started (images and releases add their own with their job kinds).
  const sweepers: Sweeper[] = [
    ...auth.sweepers,
    ...sso.sweepers,
    ...storage.sweepers,
    ...domains.sweepers,
    ...addons.sweepers,
    // The edge's per-minute counters: old minutes folded into totals, hourly (it only keeps the table from growing).
    { sweep: () => foldOldRequestStats(ctx.db), everyMs: 3_600_000 },
    ...appLogs.sweepers,
    ...webhooks.sweepers,
    ...environments.sweepers,
  ];

  return {
    ctx,
    /** What the HTTP app uses beside the routes: authentication, the audit hooks, request metrics, streams' LISTEN. */
    services: { auth: auth.auth, audit: audit.audit, metrics: metrics.metrics, notifications, apps },
    routes,
    /** Routes outside /v1 (`/metrics`). */
    rootRoutes: [...metrics.rootRoutes, ...gitPush.rootRoutes],
    sweepers,
    /** Built here, started and stopped by src/lifecycle.ts only. */
    background: {
      notifications,
      followCredentialChanges: () => auth.auth.followCredentialChanges(notifications),
      reconcileDeployed: pipeline.reconcileDeployed,
      metricsSampler: observability.metricsSampler,
      appLogLeader: appLogs.leaderCheck,
      guardWatcher: guards.guardWatcher,
      cronScheduler: cron.cronScheduler,
      sshGateway,
      // The channels' queue is registered before the outbox is first drained into it.
      startWebhookDeliveries: async () => {
        await notificationChannels.startDeliveries();
        await webhooks.startDeliveries();
      },
      warnUnconfinedBuilds: drivers.warnUnconfinedBuilds,
      addonSupervisor: addons.addonSupervisor,
      drainShipper: logDrains.drainShipper,
      alertEvaluator: alerts.alertEvaluator,
    },
  };
}

export type Composition = ReturnType<typeof composePlatform>;

/**
 * The choices between drivers, made here once: the rest of the code sees ports. (The runtime
 * itself, local or Kubernetes, and the edge, built-in or Caddy, are built by their factories
 * in src/platform/runtime and src/platform/edge; the database, embedded or external, by
 * src/platform/bootstrap.ts.)
 */
function chooseDrivers(ctx: AppContext) {
  const { config, runtime } = ctx;
  // Builders in order of preference (the source builder accepts anything): a context with a
  // Dockerfile goes to buildah. Both run a member's build steps in the application's sandbox.
  const buildSandbox = createBuildSandbox(config, ctx.db);
  const buildah = createBuildahBuilder(config, buildSandbox);
  const localEdge = runtime instanceof LocalRuntime ? runtime.router : null;
  // Custom domains are served by this process's edge (the local runtime's router), fed from the database.
  const edgeDirectory = localEdge ? new EdgeDirectory(ctx.db, ctx.secrets) : null;
  if (localEdge && edgeDirectory) localEdge.useDirectory(edgeDirectory);
  return {
    buildah,
    builders: [buildah, new SourceBuilder(join(config.dataDir, 'cache'), buildSandbox, config.BUILD_NODE_DIRS.split(':').filter(Boolean))],
    edgeDirectory,
    localEdge,
    urlOf: (hostname: string) => (localEdge ? routeUrl(hostname, localEdge.port) : `http://${hostname}`),
    // With Caddy's own ACME (EDGE_CERTIFICATES=caddy) the platform requests no certificates itself.
    edgeIssuesCertificates: config.EDGE_DRIVER === 'caddy' && config.EDGE_CERTIFICATES === 'caddy',
    // On a cluster the names are Ingress hosts: a change re-applies the application's Ingress.
    namesAreIngressHosts: config.RUNTIME === 'kubernetes',
    // The local runtime says it itself at start; with Kubernetes, source builds still run here.
    warnUnconfinedBuilds: config.RUNTIME_ISOLATION === 'none' && config.RUNTIME !== 'local',
  };
}

/**
 * The services every feature builds on: identity, organizations and their access rule,
 * projects, configuration and applications. Also what a process that runs only some
 * pipeline stages (a test's worker process) needs.
 */
export function composeCore(ctx: AppContext, repos: Repositories = createRepositories(ctx.db)) {
  const users = wireUsers({ repository: repos.users });
  const auth = wireAuth({ ctx, repository: repos.auth, users: users.users });
  const {
    access,
    organizations,
    scope: organizationScope,
    routes: organizationRoutes,
  } = wireOrganizations({
    config: ctx.config,
    db: ctx.db,
    repository: repos.organizations,
    users: users.users,
    // With SMTP configured invitations are e-mailed; without it (or when a send fails) the inviter is shown the link.
    sendInvitation: invitationSender(ctx),
  });
  const { projects, routes: projectRoutes } = wireProjects({ repository: repos.projects, access, organizationScope });
  const applications = wireApplications({
    db: ctx.db,
    repository: repos.applications,
    projects,
    latest: latestRecordsSource(ctx.db),
    detail: applicationDetailSource(ctx.db),
    // A scale reaches running instances through the deployments module (a queued `reconcile`):
    // a port the applications module owns, so it needs nothing above it.
    onScaled: reconcileAfterScale(ctx, repos.deployments),
    vetRepository: (change) => vetRepositoryChange(ctx.db, ctx.config, change),
  });
  const configurations = wireConfigurations({
    ctx,
    repository: repos.configurations,
    // A write to any scope a protected environment inherits needs an organization admin.
    writeGuard: (userId, scope) =>
      requireProtectedEnvironmentAdmin(ctx.db, userId, reachOfScope(scope), `the configuration it inherits (${scope.scope} scope)`),
    isOrganizationAdmin: async (userId, organizationId) => (await access.requireMember(userId, organizationId)).admin,
    applications: applications.apps,
  });
  return {
    users,
    auth,
    access,
    organizations,
    organizationRoutes,
    organizationScope,
    projects,
    projectRoutes,
    applications,
    configurations,
  };
}

/** The core services by name (tests' worker processes build a stage or two over them). */
export function createCoreServices(ctx: AppContext, repos: Repositories = createRepositories(ctx.db)) {
  const core = composeCore(ctx, repos);
  return { ...core, users: core.users.users, auth: core.auth.auth, config: core.configurations.config, apps: core.applications.apps };
}

/** Users and sign-in: the API's, and the command line's and first start's (which build no other service). */
export function createIdentity(ctx: AppContext, repos: Pick<Repositories, 'users' | 'auth'> = createRepositories(ctx.db)) {
  const { users } = wireUsers({ repository: repos.users });
  return { users, auth: wireAuth({ ctx, repository: repos.auth, users }).auth };
}

function invitationSender(ctx: AppContext) {
  const mailer = createMailer(ctx.config);
  if (!mailer) return undefined;
  return mailInvitations(mailer, (err) =>
    ctx.logger?.warn({ reason: mailErrorText(err) }, 'invitation e-mail not sent: the inviter is shown the link'),
  );
}
