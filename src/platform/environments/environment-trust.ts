import type { Db } from '../db/database.js';
import type { PreviewTrust } from '../db/schema.js';

/**
 * How far the platform trusts what builds and runs in an environment. The code of a pull
 * request from a fork is written by anyone on GitHub: its preview receives only the variables
 * marked for previews, and no preview's build shares a cache with another build.
 */
export interface EnvironmentTrust {
  /** A preview environment (of a pull request, whoever wrote it). */
  preview: boolean;
  /** Set for previews: whose code the pull request's head is. */
  previewTrust: PreviewTrust | null;
  /** The configuration this environment's builds and instances get. */
  configuration: 'all' | 'marked_for_previews_only';
}

/** The trust of an environment, read from its preview record (an environment without one is a project's own). */
export async function environmentTrust(db: Db, environmentId: string): Promise<EnvironmentTrust> {
  const row = await db.selectFrom('previews').select('trust').where('environment_id', '=', environmentId).executeTakeFirst();
  if (!row) return { preview: false, previewTrust: null, configuration: 'all' };
  return { preview: true, previewTrust: row.trust, configuration: previewConfiguration(row.trust) };
}

/** The rule a preview's configuration follows: a fork's gets only what is marked for previews. */
export const previewConfiguration = (trust: PreviewTrust): EnvironmentTrust['configuration'] =>
  trust === 'fork' ? 'marked_for_previews_only' : 'all';
