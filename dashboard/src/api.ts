// The dashboard's only way to the server: the public /v1 API on its own origin, typed by the
// client's generated OpenAPI types (npm run client:types), authenticated by the session cookie.
import createClient from 'openapi-fetch';
import type { components, paths } from '../../src/cli/api-types.js';

export type Schemas = components['schemas'];
export type Paths = paths;

export const api = createClient<paths>({ baseUrl: '/', credentials: 'same-origin' });

export interface FieldError {
  field: string;
  message: string;
}

/**
 * An API failure in the API's own words (`message`, plus the fields a 422 names), with the
 * request id the server answered with (x-request-id) so a report can be matched to its log line.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly fields: FieldError[] = [],
    readonly requestId: string | null = null,
  ) {
    super(message);
  }
}

interface Result<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** The success body, or an ApiError; a 401 sends the user to the login page. */
export async function ok<T>(call: Promise<Result<T>>): Promise<NonNullable<T>> {
  let result: Result<T>;
  try {
    result = await call;
  } catch {
    throw new ApiError(0, 'Cannot reach the Slipway server');
  }
  const { data, error, response } = result;
  if (response.ok) return data as NonNullable<T>;
  const body = (error ?? {}) as { message?: unknown; errors?: FieldError[] };
  const message = typeof body.message === 'string' ? body.message : `HTTP ${response.status}`;
  const fields =
    Array.isArray(body.errors) && body.errors.length > 0 ? `: ${body.errors.map((f) => `${f.field} ${f.message}`).join('; ')}` : '';
  if (response.status === 401) window.dispatchEvent(new CustomEvent('slipway:unauthenticated'));
  throw new ApiError(
    response.status,
    message + fields,
    Array.isArray(body.errors) ? body.errors : [],
    response.headers.get('x-request-id'),
  );
}

/** An error as shown to the user: the API's words, and the request id when the server gave one. */
export const errorText = (e: unknown): string =>
  e instanceof ApiError && e.requestId ? `${e.message} (request ${e.requestId})` : e instanceof Error ? e.message : String(e);

/**
 * A call by plain path, for routes the typed client cannot name statically (the configuration
 * routes every workspace-group scope shares under its own prefix). Same origin, same cookie.
 */
export function send<T = unknown>(method: string, path: string, body?: unknown): Promise<NonNullable<T>> {
  return ok<T>(
    fetch(path, {
      method,
      credentials: 'same-origin',
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    }).then(async (response) => {
      const json: unknown = response.status === 204 ? undefined : await response.json().catch(() => undefined);
      return response.ok ? { data: json as T, response } : { error: json, response };
    }),
  );
}
