import {
  BuildError,
  isImagePuller,
  type Builder,
  type BuildOutput,
  type CacheScope,
  type ImagePuller,
} from '../../platform/builder/index.js';
import { parseImageReference, pullAuthFile, pullRegistries, type RegistryCredentials } from '../../platform/builder/image-reference.js';
import type { AppContext } from '../../platform/context.js';
import type { RecordLog } from '../records/index.js';

/**
 * The build stage of an image deploy: the image the request pinned (`source_image`) is pulled
 * and unpacked by the buildah driver into the artifact, as a Dockerfile build's would be, so
 * it runs under the same isolation. Nothing is fetched or built.
 */
export async function pullSourceImage(
  ctx: AppContext,
  builders: Builder[],
  opts: {
    image: { source_image: string | null; source_credentials: string | null; version: number };
    applicationId: string;
    artifactDir: string;
    cacheScope: CacheScope;
    log: RecordLog;
    signal: AbortSignal;
    timeoutMs: number;
  },
): Promise<BuildOutput> {
  const { image, log } = opts;
  const reference = image.source_image!;
  const ref = parseImageReference(reference, null);
  if (!ref?.digest) throw new BuildError(`The image reference ${reference} is not pinned by a digest; deploy it again`);
  // The operator may have withdrawn a registry since the request: checked again here.
  const registry = pullRegistries(ctx.config).find((r) => r.host === ref.host);
  if (!registry) throw new BuildError(`The registry ${ref.host} is no longer one images may be deployed from (IMAGE_PULL_REGISTRIES)`);
  const puller = builders.find(isImagePuller) as (Builder & ImagePuller) | undefined;
  if (!puller) throw new BuildError('Deploying an image needs the buildah driver on the build machine: apt-get install buildah');
  const credentials = image.source_credentials ? (JSON.parse(ctx.secrets.open(image.source_credentials)) as RegistryCredentials) : null;
  log.line(`Source: the image ${reference}${registry.own ? " (this platform's registry)" : ''}`);
  log.enter('Build');
  log.line('Builder: image (no build: the pushed image is deployed as it is, pinned by its digest)');
  const output = await puller.pullImage({
    applicationId: opts.applicationId,
    version: image.version,
    artifactDir: opts.artifactDir,
    cacheScope: opts.cacheScope,
    signal: opts.signal,
    timeoutMs: opts.timeoutMs,
    procfileProcesses: null,
    reference,
    registry,
    authFile: await pullAuthFile(ctx.config, registry, ref, credentials),
    log: { line: (l) => log.line(l), substep: (s) => log.substep(s) },
  });
  // A cluster runtime pulls the same pinned image from where it was (workload-plan's registryReference);
  // from another registry with the credentials the deploy gave (its pull secret, see pullSecretFor).
  const registryFields = { registry_reference: `${ref.host}/${ref.name}`, manifest_digest: ref.digest };
  return { ...output, imageMetadata: { ...output.imageMetadata, ...registryFields } };
}
