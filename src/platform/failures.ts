import { Type } from 'typebox';

/**
 * Why a build, release, deployment or one-off run failed, as a stable code the records carry
 * (`error_code`) next to the human `error_detail`. Code decides on the code, never on the text.
 */
export const FAILURE_CODES = [
  /** The user's build failed (a command, a missing Procfile, a bad Dockerfile). */
  'build_failed',
  'build_timeout',
  /** The source could not be fetched (unknown ref, unreachable or private repository). */
  'source_unavailable',
  /** The release could not be created (no built image, configuration, ...). */
  'release_failed',
  /** The Procfile's release (or postdeploy) command exited non-zero or timed out. */
  'release_command_failed',
  /** Web instances never answered 2xx on the health check path before the deadline. */
  'health_check_failed',
  /** Processes kept crashing and restarting. */
  'crash_loop',
  /** A process was killed for exceeding its memory limit. */
  'oom',
  'image_pull_failed',
  /** The cluster refused the workload (Pod Security, an admission webhook, a forbidden namespace). */
  'workload_refused',
  /** A one-off run's command exited non-zero or was ended by a signal. */
  'command_failed',
  /** A one-off run's command was killed after its timeout. */
  'command_timeout',
  /** The rollout did not finish before its timeout for another reason. */
  'deploy_timeout',
  /** Any other failure of the rollout the user can act on (its detail says which). */
  'deploy_failed',
  /** The platform stopped or restarted while it ran. */
  'interrupted',
  /** Its job vanished without settling it (found by the sweeper). */
  'abandoned',
  /** A member cancelled it (POST /deployments/{id}/cancel): queued ones never ran, running ones were stopped. */
  'cancelled',
  /** The platform's disk (DATA_DIR's filesystem, or PostgreSQL's) was full: nothing of the attempt was kept; retry once space is freed. */
  'disk_full',
  /** A bug or an infrastructure failure of the platform itself. */
  'internal_error',
] as const;
export type FailureCode = (typeof FAILURE_CODES)[number];

/** A failure worth showing to the user: its message becomes `error_detail`, its code `error_code`. */
export class PipelineFailure extends Error {
  constructor(
    message: string,
    readonly code: FailureCode,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** The code of a caught error: its own when it is a {@link PipelineFailure}, else `fallback`. */
export function failureCodeOf(err: unknown, fallback: FailureCode = 'internal_error'): FailureCode {
  return err instanceof PipelineFailure ? err.code : fallback;
}

/** `error_code` in API responses: one of {@link FAILURE_CODES}, null unless the record failed. */
export const ErrorCodeSchema = Type.Unsafe<FailureCode | null>({
  anyOf: [{ type: 'string', enum: [...FAILURE_CODES] }, { type: 'null' }],
  description: 'Why it failed, stable for clients (null unless failed, and for failures recorded before error codes existed)',
});
