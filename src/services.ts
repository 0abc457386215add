import { join } from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import type { AppContext } from './platform/context.js';
import { SourceBuilder } from './platform/builder/index.js';
import { createBuildahBuilder } from './platform/builder/buildah.js';
import { SigningKeys } from './platform/crypto/signing-key.js';
import { AuthService } from './modules/auth/auth.service.js';
import { ApplicationsService } from './modules/applications/applications.service.js';
import { ConfigurationsService } from './modules/configurations/configurations.service.js';
import { ImagesService } from './modules/images/images.service.js';
import { ReleasesService } from './modules/releases/releases.service.js';
import { GithubHooksService } from './modules/github/github-hooks.service.js';
import { latestRecordsSource } from './modules/pipeline/latest-records.js';
import { PipelineService } from './modules/pipeline/pipeline.service.js';
import { EnvDeploysService } from './modules/environments/env-deploys.service.js';
import { EnvironmentPipeline } from './modules/environments/service-pipeline.js';
import { DeploymentsService } from './modules/deployments/deployments.service.js';
import { registerDeploymentJobs } from './modules/deployments/deployments.jobs.js';
import { DeployChain } from './modules/deployments/deploy-chain.js';
import { ObservabilityService } from './modules/observability/observability.service.js';
import { AcmeIssuer, DomainsService } from './modules/domains/index.js';
import { DomainsRepository } from './modules/domains/domains.repository.js';
import { EdgeDirectory } from './platform/edge/edge-directory.js';
import { LocalRuntime } from './platform/runtime/local/local-runtime.js';

/**
 * The composition root of the services: builds each once, wires their dependencies and
 * registers the pipeline's job kinds (so any process with jobs can run them).
 */
export function createServices(ctx: AppContext, log: FastifyBaseLogger) {
  const auth = new AuthService(ctx);
  ctx.jobs?.addSweeper(() => auth.pruneExpired());
  const config = new ConfigurationsService(ctx.db, ctx.secrets);
  // A scale reaches running instances through the deployments module (a queued `reconcile`).
  let deployments: DeploymentsService | undefined;
  const apps = new ApplicationsService(ctx.db, latestRecordsSource(ctx.db), async (id) => { await deployments?.scaled(id); });
  deployments = new DeploymentsService(ctx, apps);
  // Pipeline build stage: builders in order of preference (the source builder accepts anything).
  // A context with a Dockerfile goes to buildah (which says what to install when it is missing).
  const images = new ImagesService(ctx, apps, config, [createBuildahBuilder(ctx.config), new SourceBuilder(join(ctx.config.dataDir, 'cache'))]);
  if (ctx.jobs) images.registerJobs(ctx.jobs);
  const releases = new ReleasesService(ctx, apps, config);
  if (ctx.jobs) releases.registerJobs(ctx.jobs);
  const runtimeLog = log.child({ component: 'runtime' });
  registerDeploymentJobs(ctx, runtimeLog);
  // `POST /applications/{id}/deploy` (and GitHub pushes): build → release → deploy as one job.
  const deployChain = new DeployChain(ctx, apps, images, releases);
  deployChain.registerJobs(runtimeLog);

  // Custom domains: served by this process's edge (the local runtime's router), certificates by ACME.
  const edgeDirectory = ctx.runtime instanceof LocalRuntime ? new EdgeDirectory(ctx.db, ctx.secrets) : null;
  if (edgeDirectory) (ctx.runtime as LocalRuntime).instances.router.useDirectory(edgeDirectory);
  const acme = ctx.config.ACME_DIRECTORY_URL
    ? new AcmeIssuer({ directoryUrl: ctx.config.ACME_DIRECTORY_URL, email: ctx.config.ACME_EMAIL, caFile: ctx.config.ACME_CA_FILE }, new DomainsRepository(ctx.db), ctx.secrets)
    : null;
  const domains = new DomainsService(ctx.db, ctx.secrets, apps, {
    routerDomain: ctx.config.ROUTER_DOMAIN,
    ownership: { port: ctx.config.DOMAIN_CHECK_PORT, address: ctx.config.DOMAIN_CHECK_ADDRESS },
    renewDays: ctx.config.ACME_RENEW_DAYS,
  }, acme, async () => { await edgeDirectory?.refresh(); }, log.child({ component: 'domains' }));
  ctx.jobs?.addSweeper(() => domains.renewDue());

  return {
    auth, config, apps, deployments, images, releases, deployChain, domains,
    pipeline: new PipelineService(ctx.db, apps),
    githubHooks: new GithubHooksService(ctx, (id, ref, environmentId) => deployChain.start(id, ref, environmentId)),
    envDeploys: new EnvDeploysService(ctx.db, new EnvironmentPipeline(ctx, deployChain, deployments, config), log.child({ component: 'env-deploys' })),
    signingKeys: SigningKeys.forConfig(ctx.config),
    observability: new ObservabilityService(ctx.db, apps),
  };
}
