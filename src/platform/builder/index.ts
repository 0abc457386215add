export {
  BuildError,
  isImagePuller,
  type BuildInput,
  type BuildLog,
  type BuildOutput,
  type Builder,
  type CacheScope,
  type ImagePuller,
  type ImagePullInput,
} from './port.js';
export { MAX_PROCFILE_BYTES, parseProcfile } from './procfile.js';
export { readContextFile } from './context-file.js';
export { SourceBuilder } from './source-builder.js';
export { directoryDigest } from './digest.js';

import type { Builder } from './port.js';

/** The first driver that accepts the context builds it (a container driver goes before the source builder). */
export async function chooseBuilder(builders: Builder[], contextDir: string): Promise<Builder> {
  for (const b of builders) if (await b.accepts(contextDir)) return b;
  throw new Error('No builder accepts this build context');
}
