import { PipelineFailure, type FailureCode } from '../failures.js';
/**
 * The builder port: turns a source snapshot (the build context) into an immutable image
 * artifact. The pipeline fetches the source, reads the Procfile, resolves build-time
 * configuration and records progress; a builder only builds.
 *
 * Drivers: `SourceBuilder` (this machine: prepares the snapshot in place the way a
 * buildpack would). A container driver (buildah, for a Dockerfile) implements the same
 * interface and is chosen when it `accepts` the context.
 */
import { join } from 'node:path';
import type { ProcessDefinitions } from '../db/schema.js';

export interface BuildLog {
  /** One line of build output; the sink scrubs secret values before storing it. False once it keeps no more lines. */
  line(text: string): void | boolean;
  /** Progress inside the current step, e.g. "2/3" commands. */
  substep(progress: string): void;
  /** Moves to a later build step when the driver itself exports or pushes (the buildah driver does). */
  enter?(step: 'Export' | 'Push'): void;
}

export interface BuildInput {
  applicationId: string;
  version: number;
  /** `org/project/app`: the image repository name (a registry driver pushes there). */
  repositoryName: string;
  /** The snapshot of the build context at the commit. */
  contextDir: string;
  /** Where the artifact must end up (a source build prepares the context there). */
  artifactDir: string;
  /** Build-time configuration: environment of build commands, or build arguments. */
  buildEnv: Record<string, string>;
  /** Values that must never appear in logs, metadata or image history. */
  secrets: string[];
  /** Process types read from the Procfile (null when the context has none). */
  procfileProcesses: ProcessDefinitions | null;
  log: BuildLog;
  /**
   * Which caches and HOME the build reads and writes. Builds of different scopes share nothing,
   * so nothing a less trusted build writes is read by a more trusted one.
   */
  cacheScope: CacheScope;
  /** Aborted when the build must stop (shutdown): kill child processes and throw. */
  signal: AbortSignal;
  timeoutMs: number;
}

/**
 * A build's cache scope: `env-<environment id>` for an environment's builds (kept between
 * them); a throwaway one (`preview-<image id>`) for a preview's build, removed when it ends.
 */
export interface CacheScope {
  name: string;
  throwaway: boolean;
}

/** Where a cache scope of an application lives below a builder's cache root. */
export const cacheScopeDir = (root: string, applicationId: string, scope: CacheScope) =>
  join(root, 'apps', applicationId, 'scopes', scope.name);

export interface BuildOutput {
  /** Where the built artifact lives (a directory for source builds). */
  artifactPath: string;
  /** Content digest `sha256:<hex>` identifying the artifact. */
  imageId: string;
  /** The Dockerfile used, if any (recorded on the image). */
  dockerfile: string | null;
  /** What was detected and run; sizes; anything useful to show. Never secrets. */
  imageMetadata: Record<string, unknown>;
  /** `{name: {cmd, env}}`: the Procfile's, or defaults the builder derived. */
  processes: ProcessDefinitions;
}

export interface Builder {
  readonly name: string;
  /** Why this driver builds a context it accepts, printed beside its name at the top of the build. */
  readonly chosenBecause?: string;
  /** Whether this driver builds this context (e.g. a Dockerfile driver needs a Dockerfile). */
  accepts(contextDir: string): Promise<boolean>;
  build(input: BuildInput): Promise<BuildOutput>;
  /** Removes what builds of this scope left (a throwaway scope, once its build ended). */
  discardCacheScope(applicationId: string, scope: CacheScope): Promise<void>;
}

/** What pulling an image (instead of building one) needs: a reference pinned by digest and how to authenticate. */
export interface ImagePullInput extends Pick<
  BuildInput,
  'applicationId' | 'version' | 'artifactDir' | 'log' | 'cacheScope' | 'signal' | 'timeoutMs' | 'procfileProcesses'
> {
  /** `host/name@sha256:…`. */
  reference: string;
  registry: { host: string; insecure: boolean };
  /** A containers auth file (`{"auths": …}`) for the registry, or null to pull anonymously. */
  authFile: string | null;
}

/** A driver that can also take an image from a registry as it is (the buildah driver). */
export interface ImagePuller {
  pullImage(input: ImagePullInput): Promise<BuildOutput>;
}

export const isImagePuller = (b: unknown): b is ImagePuller => typeof (b as Partial<ImagePuller>)?.pullImage === 'function';

/** A failure of the user's build (bad command, missing Procfile): its message is the `error_detail`. */
export class BuildError extends PipelineFailure {
  constructor(message: string, code: FailureCode = 'build_failed') {
    super(message, code);
  }
}
