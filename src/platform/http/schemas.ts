import { Type, type Static, type TSchema } from 'typebox';

/** Building blocks shared by every module's schemas. */
export const SLUG_PATTERN = '^[a-z0-9]+(?:-[a-z0-9]+)*$';

export const Id = Type.String({ description: 'UUID (v7)' });
/** An id in a path: malformed ones answer 404 like unknown ones. */
export const IdParam = Type.String({ format: 'uuid' });
export const Timestamp = Type.String({ format: 'date-time', description: 'ISO-8601 UTC' });
export const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);
export const Name = Type.String({ minLength: 1, maxLength: 255 });
export const Slug = Type.String({ minLength: 1, maxLength: 63, pattern: SLUG_PATTERN });

/** An organization under the API's `workspace` alias (`/v1/workspaces/{workspace}`: the organization's slug). */
export const WorkspaceParams = Type.Object({ workspace: Slug });
/** A project under the API's `workspace` alias of an organization (`/v1/workspaces/{workspace}/projects/{project}`). */
export const WorkspaceProjectParams = Type.Object({ workspace: Slug, project: Slug });

export const ErrorResponse = Type.Object(
  {
    status: Type.Integer(),
    message: Type.String(),
    errors: Type.Optional(Type.Array(Type.Object({ field: Type.String(), message: Type.String() }))),
  },
  { $id: 'Error', description: 'Every error: `status` equals the HTTP status' },
);

export const Ok = Type.Object({ ok: Type.Boolean() });

/** Far beyond any real list, and small enough that `(page - 1) * per_page` stays a valid SQL offset. */
export const MAX_PAGE = 100_000;

export const PaginationQuery = Type.Object({
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE, default: 1 })),
  per_page: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
});
export type PaginationQuery = Static<typeof PaginationQuery>;

/** `?environment=<slug>` narrows an application's pipeline lists and latest records to one environment (default: all). */
export const EnvironmentQuery = Type.Object({
  environment: Type.Optional(Type.String({ ...Slug, description: 'an environment slug of the project; default: every environment' })),
});
export const PaginatedEnvironmentQuery = Type.Object({ ...PaginationQuery.properties, ...EnvironmentQuery.properties });
export type PaginatedEnvironmentQuery = Static<typeof PaginatedEnvironmentQuery>;

export const Pagination = Type.Object(
  {
    page: Type.Integer(),
    per_page: Type.Integer(),
    total: Type.Integer(),
    pages: Type.Integer(),
  },
  { $id: 'Pagination' },
);

export function Paginated<T extends TSchema>(item: T) {
  return Type.Object({ items: Type.Array(item), pagination: Pagination });
}

export function pageOf(query: PaginationQuery, total: number) {
  const page = query.page ?? 1;
  const per_page = query.per_page ?? 20;
  return { page, per_page, total, pages: Math.ceil(total / per_page), offset: (page - 1) * per_page };
}

/** Fetches the requested page (`fetch(limit, offset)`) and answers it as a `Paginated` body. */
export async function paginate<R, T>(
  query: PaginationQuery,
  fetch: (limit: number, offset: number) => Promise<{ rows: R[]; total: number }>,
  view: (row: R) => T,
) {
  const requested = pageOf(query, 0);
  const { rows, total } = await fetch(requested.per_page, requested.offset);
  const { offset: _offset, ...pagination } = pageOf(query, total);
  return { items: rows.map(view), pagination };
}

/** Responses every authenticated route can give, so OpenAPI documents them. */
export const commonErrorResponses = {
  400: ErrorResponse,
  401: ErrorResponse,
  403: ErrorResponse,
  404: ErrorResponse,
  409: ErrorResponse,
  413: ErrorResponse,
  422: ErrorResponse,
  429: ErrorResponse,
};

export const iso = (d: Date) => d.toISOString();
export const isoOrNull = (d: Date | null | undefined) => (d ? d.toISOString() : null);
