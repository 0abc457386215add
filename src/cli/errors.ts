/** Exit codes scripts can rely on. */
export const EXIT = {
  ok: 0,
  /** A failed deploy, build, release or run, a conflict, anything else that went wrong. */
  failure: 1,
  /** Bad arguments or input the API refused as invalid (400/422). */
  usage: 2,
  notFound: 3,
  /** Not logged in, key rejected (401) or not allowed (403). */
  auth: 4,
} as const;

/** An error the CLI reports in one line (no stack) and exits with. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT.failure,
  ) {
    super(message);
  }
}

/** The API answered `{status, message}`. */
export class ApiError extends CliError {
  constructor(
    readonly status: number,
    message: string,
    readonly fieldErrors: Array<{ field: string; message: string }> = [],
  ) {
    super(message, exitCodeOf(status));
  }
}

function exitCodeOf(status: number): number {
  if (status === 401 || status === 403) return EXIT.auth;
  if (status === 404) return EXIT.notFound;
  if (status === 400 || status === 422) return EXIT.usage;
  return EXIT.failure;
}

export function usage(message: string): CliError {
  return new CliError(message, EXIT.usage);
}
