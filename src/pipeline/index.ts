// The pipeline's public surface: what the HTTP modules above it, the composition root and the
// entry points use. The stages and their order: ./stages.ts; a walk through the folder: ./README.md.
export * from './stages.js';
export * from './build/image-records.js';
export * from './build/images.service.js';
export { ImagesRepository } from './build/images.repository.js';
export { applicationArtifactsDir, artifactDir } from './build/build-runner.js';
export * from './release/release-freezer.js';
export * from './release/promotion.js';
export * from './release/releases.service.js';
export { ConfigRelease } from './release/config-release.js';
export { ImageDeploys, type ImageDeployRequest } from './build/image-deploys.js';
export { ReleasesRepository } from './release/releases.repository.js';
export * from './deploy/deployments.repository.js';
export * from './deploy/deployments.jobs.js';
export * from './deploy/deployments.service.js';
export { ApplicationRemoval } from './deploy/application-removal.js';
export * from './deploy/environment-choice.js';
export * from './deploy-chain.js';
export { OneOffRunsRepository } from './run/one-off-runs.repository.js';
export * from './run/one-off-runs.service.js';
export * from './env-deploys/env-deploys.service.js';
export { EnvDeploysRepository } from './env-deploys/env-deploys.repository.js';
export * from './env-deploys/environment-pipeline.js';
export * from './status/latest-records.js';
export * from './status/application-detail.js';
export * from './status/pipeline.service.js';
export { moveArtifactRoot } from './build/artifact-root.js';
export * from './wire.js';
