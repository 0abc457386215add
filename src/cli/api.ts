import createClient from 'openapi-fetch';
import type { components, paths } from './api-types.js';
import { ApiError, CliError, EXIT } from './errors.js';

export type Paths = paths;
export type Api = ReturnType<typeof createClient<Paths>>;
export type Schemas = components['schemas'];

export const USER_AGENT = 'slipway-cli/0.1';

/** The typed client: every call names a route of the generated `paths`, so a changed route fails the typecheck. */
export function createApi(server: string, apiKey: string | undefined): Api {
  const headers: Record<string, string> = { 'user-agent': USER_AGENT };
  if (apiKey) headers['x-api-key'] = apiKey;
  return createClient<Paths>({ baseUrl: server, headers, fetch: (request) => fetchOrExplain(server, request) });
}

/** Network failures become one clear line instead of `fetch failed`. */
export async function fetchOrExplain(server: string, input: Request | string, init?: RequestInit): Promise<Response> {
  try {
    return await fetch(input, init);
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err;
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new CliError(
      `Cannot reach the Slipway server at ${server} (${cause?.code ?? cause?.message ?? (err as Error).message}); set --server or SLIPWAY_SERVER`,
    );
  }
}

interface Result<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** The success body, or an ApiError carrying the API's `{status, message}`. */
export async function ok<T>(call: Promise<Result<T>>): Promise<NonNullable<T>> {
  const { data, error, response } = await call;
  if (response.ok) return data as NonNullable<T>;
  throw apiError(response.status, error);
}

export function apiError(status: number, body: unknown): ApiError {
  const e = (body ?? {}) as { message?: unknown; errors?: Array<{ field: string; message: string }> };
  const message = typeof e.message === 'string' ? e.message : `HTTP ${status}`;
  const fields = Array.isArray(e.errors) ? e.errors : [];
  const detail = fields.length > 0 ? `${message}: ${fields.map((f) => `${f.field} ${f.message}`).join('; ')}` : message;
  return new ApiError(status, detail, fields);
}

export { EXIT };
