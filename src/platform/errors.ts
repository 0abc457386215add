/**
 * One registry of error kinds. Services throw `AppError`s by kind; the HTTP layer
 * turns any of them into `{status, message}` with the registered status.
 */
export const ERROR_KINDS = {
  BAD_REQUEST: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  /** A link that worked once and no longer does (an invitation expired, revoked or accepted). */
  GONE: 410,
  /** The organization's disk use is at its quota: new builds are refused (docs/api-decisions.md). */
  DISK_QUOTA_EXCEEDED: 409,
  PAYLOAD_TOO_LARGE: 413,
  URI_TOO_LONG: 414,
  UNSUPPORTED_MEDIA_TYPE: 415,
  VALIDATION: 422,
  RATE_LIMITED: 429,
  /** A single sign-on's identity provider is down or answered badly: the sign-in stops (docs/api-decisions.md). */
  IDENTITY_PROVIDER_UNAVAILABLE: 424,
  INTERNAL: 500,
  UNAVAILABLE: 503,
  /** The platform's disk (DATA_DIR's, or PostgreSQL's) is full: the write was refused, reads still answer. */
  INSUFFICIENT_STORAGE: 507,
  /** PostgreSQL cannot be reached (down, restarting, a lost connection): answered with Retry-After. */
  DATABASE_UNAVAILABLE: 503,
} as const;

export type ErrorKind = keyof typeof ERROR_KINDS;

export interface FieldError {
  field: string;
  message: string;
}

export class AppError extends Error {
  readonly status: number;
  constructor(
    readonly kind: ErrorKind,
    message: string,
    readonly errors?: FieldError[],
  ) {
    super(message);
    this.name = 'AppError';
    this.status = ERROR_KINDS[kind];
  }
}

export const notFound = (what: string) => new AppError('NOT_FOUND', `${what} not found`);
export const forbidden = (message = 'Permission denied for this resource') => new AppError('FORBIDDEN', message);
export const conflict = (message: string) => new AppError('CONFLICT', message);
export const invalid = (field: string, message: string) => new AppError('VALIDATION', `${field}: ${message}`, [{ field, message }]);
/** What a request that needed the database gets while it is away (the error handler maps pg's connection errors to it). */
export const databaseUnavailable = () => new AppError('DATABASE_UNAVAILABLE', 'The database is unavailable; retry shortly');
export const unauthenticated = (message = 'Not authenticated; log in or provide an API key') => new AppError('UNAUTHENTICATED', message);

/** PostgreSQL unique_violation, raised when two requests race for one slug or name. */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: string; constraint?: string };
  return e?.code === '23505' && (constraint === undefined || e.constraint === constraint);
}
