import { readTextBeneath, UnsafePathError } from '../fs/beneath.js';
import type { ManifestCronEntry } from '../db/schema.js';
import { parseSchedule } from './schedule.js';

const NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const MAX_ENTRIES = 100;
const MAX_MANIFEST_BYTES = 4 * 1024 * 1024;

/** A `cron` list in slipway.json that cannot be used (the build fails with this message). */
export class ManifestCronError extends Error {}

/**
 * The `cron` entries of the build context's slipway.json (`[{name, schedule, command}]`),
 * checked as the API checks them; null when there is no slipway.json or it names none.
 */
export async function readManifestCron(contextDir: string, allowSeconds: boolean): Promise<ManifestCronEntry[] | null> {
  // The checkout is the member's: read without following a symlink, bounded (see fs/beneath.ts).
  const text = await readTextBeneath(contextDir, 'slipway.json', MAX_MANIFEST_BYTES).catch((err) => {
    if (err instanceof UnsafePathError)
      throw new ManifestCronError(`${err.message}: the platform reads only regular files inside the build context`);
    throw err;
  });
  if (text === null) return null;
  let manifest: { cron?: unknown };
  try {
    manifest = JSON.parse(text);
  } catch (err) {
    throw new ManifestCronError(`slipway.json is not valid JSON: ${(err as Error).message}`);
  }
  if (manifest === null || typeof manifest !== 'object' || manifest.cron === undefined) return null;
  if (!Array.isArray(manifest.cron) || manifest.cron.length > MAX_ENTRIES)
    throw new ManifestCronError(`slipway.json: "cron" must be a list of at most ${MAX_ENTRIES} {name, schedule, command} entries`);
  const seen = new Set<string>();
  return manifest.cron.map((entry: unknown, i: number) => {
    const e = (entry ?? {}) as Record<string, unknown>;
    const where = `slipway.json: cron[${i}]`;
    if (typeof e.name !== 'string' || !NAME.test(e.name))
      throw new ManifestCronError(`${where}: "name" must be lowercase letters, digits, - or _ (at most 63)`);
    if (seen.has(e.name)) throw new ManifestCronError(`${where}: the name "${e.name}" is used twice`);
    seen.add(e.name);
    if (typeof e.command !== 'string' || e.command.trim() === '' || e.command.length > 4096)
      throw new ManifestCronError(`${where}: "command" must be a non-empty command line`);
    if (typeof e.schedule !== 'string') throw new ManifestCronError(`${where}: "schedule" must be a cron expression`);
    try {
      parseSchedule(e.schedule, allowSeconds);
    } catch (err) {
      throw new ManifestCronError(`${where}: schedule "${e.schedule}": ${(err as Error).message}`);
    }
    return { name: e.name, schedule: e.schedule.trim(), command: e.command };
  });
}
