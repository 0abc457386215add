import { sql } from 'kysely';
import type { AppContext } from '../../platform/context.js';
import type { AppOutputLine } from '../../platform/runtime/application-runtime.js';
import { scrubber } from '../../platform/runtime/scrub.js';
import { openConfiguration, type DisplayedVariable } from '../../pipeline/index.js';

const CACHE_MS = 30_000;

/**
 * Pod logs arrive unscrubbed (the cluster runs the processes): each line is scrubbed with
 * the secret values of the release serving its application environment (cached 30 s).
 */
export function servingReleaseScrubber(ctx: AppContext): (line: AppOutputLine) => Promise<string> {
  const cache = new Map<string, { at: number; scrub: Promise<(text: string) => string> }>();
  const load = async (applicationId: string, environmentId: string) => {
    const release = await ctx.db
      .selectFrom('deployments as d')
      .innerJoin('releases as r', 'r.id', 'd.release_id')
      .select(['r.configuration', 'r.configuration_sealed'])
      .where('d.application_id', '=', applicationId)
      .where('d.environment_id', '=', environmentId)
      .where('d.status', '=', 'complete')
      .orderBy('d.finished_at', 'desc')
      .limit(1)
      .executeTakeFirst();
    if (!release) return (text: string) => text;
    const env = openConfiguration(ctx.secrets, release.configuration_sealed);
    const secretNames = new Set(((release.configuration ?? []) as DisplayedVariable[]).filter((v) => v.secret).map((v) => v.name));
    return scrubber(
      Object.entries(env)
        .filter(([k]) => secretNames.has(k))
        .map(([, v]) => v),
    );
  };
  return async (line) => {
    const key = `${line.applicationId}:${line.environmentId}`;
    let entry = cache.get(key);
    if (!entry || Date.now() - entry.at > CACHE_MS) {
      entry = { at: Date.now(), scrub: load(line.applicationId, line.environmentId) };
      cache.set(key, entry);
    }
    return (await entry.scrub)(line.line);
  };
}

/**
 * Every worker follows the same cluster: only the live worker with the smallest id stores
 * pod logs (checked every 10 s), so each line is stored once.
 */
export function oldestLiveWorker(ctx: AppContext, onError: (err: unknown) => void): LeaderCheck {
  let leader = false;
  let timer: NodeJS.Timeout | null = null;
  const check = async () => {
    try {
      const row = await ctx.db
        .selectFrom('workers')
        .select('id')
        .where('stopped_at', 'is', null)
        .where('heartbeat_at', '>', sql<Date>`now() - interval '30 seconds'`)
        .orderBy('id')
        .limit(1)
        .executeTakeFirst();
      leader = row !== undefined && row.id === ctx.jobs?.workerId;
    } catch (err) {
      onError(err);
    }
  };
  return {
    isLeader: () => leader,
    // Checked every 10 s once started (src/lifecycle.ts), not when built.
    start() {
      timer ??= setInterval(() => void check(), 10_000);
      timer.unref();
      void check();
    },
    stop() {
      if (timer) clearInterval(timer);
      timer = null;
    },
  };
}

export interface LeaderCheck {
  isLeader(): boolean;
  start(): void;
  stop(): void;
}
