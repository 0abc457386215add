import type { AppContext } from '../../platform/context.js';
import type { JobWait } from '../../platform/jobs/job-store.js';

/** What a job kind is called in a queue reason. */
const KIND_NAMES: Record<string, string> = {
  deploy: 'deployment',
  chain: 'build and deploy of image',
  build: 'build',
  release: 'release',
  reconcile: 'scaling',
  run: 'one-off run',
};

/** A wait as a phrase for people: "waiting for deployment 0193… of app web", "organization limit 3 reached". */
export function describeWait(wait: JobWait, appName: string): string {
  if ('behind' in wait) {
    const { kind, recordId, running } = wait.behind;
    const what = `${KIND_NAMES[kind] ?? kind}${recordId && kind !== 'reconcile' ? ` ${recordId}` : ''}`;
    return `waiting for ${what} of app ${appName}${running ? '' : ' (queued before it)'}`;
  }
  if ('limit' in wait) {
    if (wait.limit === 'organization')
      return `organization limit ${wait.cap} reached: that many of its pipeline jobs are running (PIPELINE_ORG_CONCURRENCY)`;
    if (wait.limit === 'owner')
      return `limit ${wait.cap} reached for the organizations of this organization's creator together (PIPELINE_USER_CONCURRENCY)`;
    return `platform limit ${wait.cap} reached: that many pipeline jobs are running on the site (PIPELINE_SITE_CONCURRENCY)`;
  }
  return 'waiting for a free worker';
}

/**
 * Why each queued record (by its job) has not started: job id → reason. Records whose job
 * runs or has settled get none.
 */
export async function queueReasons(ctx: AppContext, applicationId: string, jobIds: Array<string | null>): Promise<Map<string, string>> {
  const ids = jobIds.filter((id): id is string => id !== null);
  const reasons = new Map<string, string>();
  if (!ctx.jobs || ids.length === 0) return reasons;
  const waits = await ctx.jobs.waits(ids);
  if (waits.size === 0) return reasons;
  const app = await ctx.db.selectFrom('applications').select('slug').where('id', '=', applicationId).executeTakeFirst();
  for (const [jobId, wait] of waits) reasons.set(jobId, describeWait(wait, app?.slug ?? applicationId));
  return reasons;
}
