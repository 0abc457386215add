import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from '../../platform/db/database.js';

/** How a followed chain ended. */
export type ChainResult =
  { ok: true; url: string | null; deploymentId: string } | { ok: false; detail: string; seeMore: string } | { ok: null; seeMore: string };

const POLL_MS = 500;

/**
 * Follows one deploy chain (its image, release and deployment records, found by its job)
 * and hands each new log line to `line` until the chain settles or `deadline` passes.
 * Reads the pipeline's records only; the chain runs in a worker.
 */
export async function followChain(
  db: Db,
  chain: { imageId: string; jobId: string | null },
  line: (text: string) => void,
  deadline: number,
  /** The client went away: stop following (the chain goes on in its worker). */
  gone: () => boolean = () => false,
): Promise<ChainResult> {
  const printed = { image: 0, release: 0, deployment: 0 };
  const print = (key: keyof typeof printed, text: string, final: boolean) => {
    // Only whole lines, unless the record is done (its last line may lack the newline).
    const end = final ? text.length : text.lastIndexOf('\n') + 1;
    if (end <= printed[key]) return;
    for (const l of text.slice(printed[key], end).split('\n')) if (l) line(l);
    printed[key] = end;
  };
  const buildLog = `slipway builds log ${chain.imageId}`;
  for (;;) {
    const image = await db
      .selectFrom('images')
      .select(['status', 'log_text', 'error_detail'])
      .where('id', '=', chain.imageId)
      .executeTakeFirst();
    if (!image) return { ok: false, detail: 'the build record is gone', seeMore: buildLog };
    print('image', image.log_text, image.status !== 'building');
    if (image.status === 'error') return { ok: false, detail: `build failed: ${image.error_detail ?? 'see its log'}`, seeMore: buildLog };
    if (chain.jobId && image.status === 'built') {
      const release = await db
        .selectFrom('releases')
        .select(['id', 'status', 'log_text', 'error_detail'])
        .where('job_id', '=', chain.jobId)
        .orderBy('created_at', 'desc')
        .executeTakeFirst();
      if (release) {
        print('release', release.log_text, release.status !== 'building');
        if (release.status === 'error')
          return {
            ok: false,
            detail: `release failed: ${release.error_detail ?? 'see its log'}`,
            seeMore: `slipway releases log ${release.id}`,
          };
      }
      const deployment = await db
        .selectFrom('deployments')
        .select(['id', 'status', 'deploy_log', 'error_detail', 'deploy_metadata'])
        .where('job_id', '=', chain.jobId)
        .orderBy('created_at', 'desc')
        .executeTakeFirst();
      if (deployment) {
        const settled = deployment.status === 'complete' || deployment.status === 'error' || deployment.status === 'rolled_back';
        print('deployment', deployment.deploy_log, settled);
        if (deployment.status === 'complete') {
          const url = (deployment.deploy_metadata as { url?: unknown } | null)?.url;
          return { ok: true, url: typeof url === 'string' ? url : null, deploymentId: deployment.id };
        }
        if (settled)
          return {
            ok: false,
            detail: `deploy failed: ${deployment.error_detail ?? deployment.status}`,
            seeMore: `slipway deployments log ${deployment.id}`,
          };
      } else {
        // The job ended without a deployment: a stage failed before (its record says why) or the chain was cancelled.
        const job = await db.selectFrom('pipeline_jobs').select('state').where('id', '=', chain.jobId).executeTakeFirst();
        if (job && (job.state === 'completed' || job.state === 'failed') && release?.status !== 'building')
          return { ok: false, detail: 'the deploy chain ended without a deployment', seeMore: buildLog };
      }
    }
    if (Date.now() >= deadline || gone()) return { ok: null, seeMore: buildLog };
    await sleep(POLL_MS);
  }
}
