/**
 * Slipway's words for where a build or deploy stands, in the words Ancla's clients read. The one
 * place the two vocabularies meet: every Ancla-shaped route maps its statuses through here
 * (docs/api-decisions.md, "Ancla's clients").
 *
 * Ancla says `success` where Slipway says `built` (an image) or `complete` (a deployment): its CLI
 * waits for `success` or `error` on a pipeline stage and for `complete`/`success` or
 * `error`/`failed` on a deploy log. Progress words (`building`, `deploying`) are the same in both.
 */

/** Where a build or deploy stands, as Ancla's pipeline status and build views say it. */
export type AnclaStatus = 'queued' | 'building' | 'releasing' | 'deploying' | 'success' | 'error';

/** An image's status (`building` | `built` | `error`) as Ancla's build status. */
export function buildStatus(imageStatus: string): AnclaStatus {
  if (imageStatus === 'built') return 'success';
  if (imageStatus === 'error') return 'error';
  return 'building';
}

/**
 * A deployment's status (`queued` | `deploying` | `complete` | `error` | `rolled_back`) as Ancla's
 * deploy status. A rolled-back deployment did not stay: to Ancla it failed.
 */
export function deployStatus(deploymentStatus: string): AnclaStatus {
  if (deploymentStatus === 'complete') return 'success';
  if (deploymentStatus === 'error' || deploymentStatus === 'rolled_back') return 'error';
  return 'deploying';
}

/** A release's status as Ancla's pipeline stage status (Ancla has no release stage of its own). */
export const releaseStatus = buildStatus;

/**
 * Any Slipway pipeline word (image, release, deployment, environment deploy or one of its services)
 * as Ancla's: for views that mix records, e.g. a pipeline's stages.
 */
export function anclaStatus(slipwayStatus: string): AnclaStatus {
  switch (slipwayStatus) {
    case 'built':
    case 'complete':
    case 'succeeded':
      return 'success';
    case 'error':
    case 'rolled_back':
    case 'failed':
    case 'timed_out':
      return 'error';
    case 'queued':
    case 'pending':
      return 'queued';
    case 'releasing':
      return 'releasing';
    case 'deploying':
    case 'running':
      return 'deploying';
    default:
      return 'building';
  }
}

/**
 * The deploy words of an environment deploy's record (`deploying` | `complete` | `error`), which
 * Ancla's deploy log and detail read as they are: a deployment's status in those words.
 */
export function deployLogStatus(deploymentStatus: string): 'deploying' | 'complete' | 'error' {
  if (deploymentStatus === 'complete') return 'complete';
  if (deploymentStatus === 'error' || deploymentStatus === 'rolled_back') return 'error';
  return 'deploying';
}

/* The project pipeline view's stage words (`pipeline/status`): a deploy stage reads `pending` or `in_progress`. */

/** Ancla's word for an image's status (Slipway: building | built | error). */
export function anclaBuildStatus(status: string): string {
  if (status === 'built') return 'success';
  return status; // `building`, `error`: the same word in both
}

/** Ancla's word for a deployment's status (Slipway: queued | deploying | complete | error | rolled_back). */
export function anclaDeployStatus(status: string): string {
  switch (status) {
    case 'complete':
      return 'success';
    case 'rolled_back':
      return 'error';
    case 'queued':
      return 'pending';
    case 'deploying':
    case 'releasing':
      return 'in_progress';
    default:
      return status;
  }
}
