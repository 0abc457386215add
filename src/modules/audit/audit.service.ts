import type { Db } from '../../platform/db/database.js';
import { iso, paginate } from '../../platform/http/schemas.js';
import { AuditRepository } from './audit.repository.js';
import type { AuditEntry, AuditQuery } from './audit.schemas.js';

/** The organization a caller administers, by slug (403/404 otherwise): the organizations module's rule. */
export type RequireOrganizationAdmin = (userId: string, slug: string) => Promise<{ id: string }>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Reading the audit log (rows are written by the auditing driver, platform/audit/). */
export class AuditService {
  private readonly repo: AuditRepository;

  constructor(
    db: Db,
    repo: AuditRepository,
    private readonly requireAdmin: RequireOrganizationAdmin,
  ) {
    this.repo = repo;
  }

  async forOrganization(userId: string, slug: string, query: AuditQuery) {
    const org = await this.requireAdmin(userId, slug);
    return this.list({ ...query, organizationId: org.id });
  }

  /** Every organization's entries, and those of no organization (sign-ins, users): site administrators. */
  list(query: AuditQuery & { organizationId?: string }) {
    return paginate(query, (limit, offset) => this.repo.page(query, limit, offset), view);
  }

  /** Fills in a created resource's id (201: the new resource's) and its organization from a successful response body. */
  async complete(rowId: number, resourceType: string, response: unknown, created: boolean) {
    if (!response || typeof response !== 'object') return;
    const body = response as Record<string, unknown>;
    const id = typeof body.id === 'string' || typeof body.id === 'number' ? String(body.id) : null;
    let organizationId = typeof body.organization_id === 'string' ? body.organization_id : null;
    if (!organizationId && (resourceType === 'organizations' || resourceType === 'workspaces') && id && UUID.test(id)) organizationId = id;
    if (organizationId && !UUID.test(organizationId)) organizationId = null;
    if (id || organizationId) await this.repo.complete(rowId, id, organizationId, created);
  }
}

function view(row: Awaited<ReturnType<AuditRepository['page']>>['rows'][number]): AuditEntry {
  return {
    id: Number(row.id),
    at: iso(row.at),
    organization_id: row.organization_id,
    actor: {
      user_id: row.actor_user_id,
      username: row.actor_username,
      credential_kind: row.credential_kind,
      credential_id: row.credential_id,
    },
    action: row.action,
    resource_type: row.resource_type,
    resource_id: row.resource_id,
    client_address: row.client_address,
    peer_address: row.peer_address,
    denied: row.denied,
    request_id: row.request_id,
    before: (row.before as Record<string, unknown> | null) ?? null,
    after: row.after ?? null,
  };
}
