import type { ApplicationsService } from '../../modules/applications/index.js';
import {
  manifestDigest,
  ownPullToken,
  parseImageReference,
  pinnedReference,
  pullRegistries,
  RegistryLookupError,
  type RegistryCredentials,
} from '../../platform/builder/image-reference.js';
import { requireDeployAccess } from '../../platform/access/environment-protection.js';
import type { AppContext } from '../../platform/context.js';
import { AppError, forbidden, invalid, notFound } from '../../platform/errors.js';
import { chosenEnvironmentId } from '../deploy/environment-choice.js';
import type { BuildSource } from './images.service.js';

export interface ImageDeployRequest {
  /** `host/name:tag`, `host/name@sha256:…`, or `org/project/app:tag` in the platform's registry. */
  image: string;
  /** Environment slug (or id) of the application's project; production when absent. */
  environment?: string;
  /** For a registry of IMAGE_PULL_REGISTRIES that needs them; kept sealed, never shown. */
  credentials?: RegistryCredentials;
}

/** The chain's entry point (DeployChain.start), as image deploys need it. */
type ChainStart = (
  applicationId: string,
  ref: string | null,
  environmentId: string,
  source: BuildSource,
) => Promise<{ ok: boolean; image_id: string; job_id: string }>;

/**
 * `POST /applications/{id}/deploy` with an `image`: releases an image already in a registry
 * (pushed with `docker push`, `podman push` or `skopeo copy`) without building. Everything
 * is checked before anything is stored: the reference, the registry (the platform's, or one
 * the operator allows), the repository (in the platform's registry: the application's own
 * organization's), and that the image exists, whose digest is then pinned.
 */
export class ImageDeploys {
  constructor(
    private readonly ctx: AppContext,
    private readonly apps: Pick<ApplicationsService, 'authorize'>,
    private readonly start: ChainStart,
  ) {}

  async request(userId: string, applicationId: string, body: ImageDeployRequest) {
    const app = await this.apps.authorize(userId, applicationId);
    const environmentId = await chosenEnvironmentId(this.ctx.db, applicationId, body.environment);
    await requireDeployAccess(this.ctx.db, userId, environmentId);
    const registries = pullRegistries(this.ctx.config);
    const own = registries.find((r) => r.own) ?? null;
    const ref = parseImageReference(body.image.trim(), own?.host ?? null);
    if (!ref) {
      throw invalid(
        'image',
        own
          ? "not an image reference: use host/name:tag, host/name@sha256:<digest>, or org/project/app:tag for this platform's registry"
          : 'not an image reference: use host/name:tag or host/name@sha256:<digest>',
      );
    }
    const registry = registries.find((r) => r.host === ref.host);
    if (!registry) {
      const allowed =
        registries.map((r) => r.host).join(', ') || 'none (the operator has set neither REGISTRY_URL nor IMAGE_PULL_REGISTRIES)';
      throw invalid('image', `the registry ${ref.host} is not one images may be deployed from; allowed: ${allowed}`);
    }
    if (registry.own) {
      // The platform's registry holds every organization's images: only this organization's may be deployed here.
      const [org, ...rest] = ref.name.split('/');
      if (org !== app.organization_slug || rest.length !== 2) {
        throw forbidden(
          `${ref.name} is not a repository of the organization ${app.organization_slug}: its images are pushed to ` +
            `${registry.host}/${app.organization_slug}/<project>/<application>`,
        );
      }
      if (body.credentials) throw invalid('credentials', "the platform's registry needs none: leave them out");
    }
    let digest: string | null;
    try {
      digest = await manifestDigest(
        registry,
        ref,
        registry.own ? { bearer: (await ownPullToken(this.ctx.config, ref.name)) ?? undefined } : { credentials: body.credentials ?? null },
      );
    } catch (err) {
      if (err instanceof RegistryLookupError) throw new AppError('UNAVAILABLE', `Cannot look the image up: ${err.message}`);
      throw err;
    }
    if (!digest) {
      throw notFound(
        `Image ${body.image.trim()} (${registry.host} has no such ${ref.digest ? 'digest' : 'tag'}${registry.own ? '' : ', or these credentials cannot read it'})`,
      );
    }
    const pinned = pinnedReference(ref, digest);
    const sealed = body.credentials && !registry.own ? this.ctx.secrets.seal(JSON.stringify(body.credentials)) : null;
    const started = await this.start(applicationId, body.image.trim(), environmentId, {
      image: { reference: pinned, credentials: sealed },
    });
    return { ok: started.ok, image_id: started.image_id, image: pinned, job_id: started.job_id };
  }
}
