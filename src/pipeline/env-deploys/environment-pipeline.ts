import type { AppContext } from '../../platform/context.js';
import type { DeployChain } from '../deploy-chain.js';
import type { DeploymentsService } from '../deploy/deployments.service.js';
import type { ReleasePromoter } from '../release/promotion.js';
import type { ServicePipeline } from './env-deploys.service.js';
import { effectiveProcessSettings } from '../../modules/environments/index.js';

/**
 * Environment deploys over the pipeline modules: a deploy is the same build → release →
 * deploy chain as `POST /applications/{id}/deploy`, aimed at the environment; a promotion
 * copies a built release (image reference + frozen configuration) into the target
 * environment as its next release (the releases module's promoter) and queues its
 * deployment, so nothing is rebuilt.
 */
export class EnvironmentPipeline implements ServicePipeline {
  constructor(
    private readonly ctx: AppContext,
    private readonly chain: DeployChain,
    private readonly deployments: DeploymentsService,
    private readonly promoter: ReleasePromoter,
  ) {}

  available() {
    return Boolean(this.ctx.jobs);
  }

  async deploy(applicationId: string, environmentId: string, ref: string | null) {
    const started = await this.chain.start(applicationId, ref, environmentId);
    return { imageId: started.image_id };
  }

  currentRelease(applicationId: string, environmentId: string) {
    return this.deployments.currentRelease(applicationId, environmentId);
  }

  async promote(sourceReleaseId: string, environmentId: string, configuration: 'source' | 'target') {
    const promoted = await this.promoter.promote(sourceReleaseId, environmentId, configuration, (applicationId) =>
      effectiveProcessSettings(this.ctx.db, applicationId, environmentId),
    );
    const { deployment_id } = await this.deployments.queue(promoted.applicationId, environmentId, promoted.releaseId);
    return { imageId: promoted.imageId, releaseId: promoted.releaseId, deploymentId: deployment_id };
  }
}
