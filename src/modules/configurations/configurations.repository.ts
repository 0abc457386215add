import { sql, type Insertable, type Updateable } from 'kysely';
import type { Db } from '../../platform/db/database.js';
import { precompiled } from '../../platform/db/precompiled.js';
import { lockedEnvironmentSlug } from '../../platform/access/environment-protection.js';
import { isoText } from '../../platform/db/json-answers.js';
import type { ConfigScope, ConfigVarsTable } from '../../platform/db/schema.js';

export interface ScopeRef {
  scope: ConfigScope;
  scopeId: string;
}

/** `ConfigurationsRepository.applicationWriteChecks`. */
export interface ApplicationWriteChecks {
  id: string;
  is_member: boolean;
  org_admin: boolean;
  locked: string | null;
  variables: number;
  bytes: number;
}

export class ConfigurationsRepository {
  // The variables of a scope: read on every configuration list and every release.
  private readonly inScope;

  // Each variable's size in a scope: read before every write (the scope's limits).
  private readonly sizes;

  // An application's write checks and its scope's size without the names written: before every bulk write.
  private readonly writeChecks;

  // The configuration list's answer as JSON text, with the caller's access, in one read.
  private readonly answerOfApplicationForUser;

  constructor(private readonly db: Db) {
    this.writeChecks = precompiled(
      db,
      ['applicationId', 'userId', 'names'],
      ({ applicationId, userId, names }: { applicationId: string; userId: string; names: string[] }) => ({
        compile: () =>
          sql<ApplicationWriteChecks>`
          select a.id, m.user_id is not null as is_member, coalesce(m.admin, false) as org_admin,
                 (${lockedEnvironmentSlug(db, 'applicationId', userId, sql<string>`a.id`)}) as locked,
                 others.variables, others.bytes
          from applications a
          join projects p on p.id = a.project_id
          left join memberships m on m.organization_id = p.organization_id and m.user_id = ${userId}
          cross join lateral (
            select count(*)::int as variables,
                   coalesce(sum(octet_length(v.name) + coalesce(octet_length(v.value), octet_length(v.value_sealed), 0)), 0)::int as bytes
            from config_vars v
            where m.user_id is not null and v.scope = 'application' and v.scope_id = a.id and not (lower(v.name) = any(${names}::text[]))
          ) others
          where a.id = ${applicationId}`.compile(db),
      }),
    );
    this.sizes = precompiled(db, ['scope', 'scopeId'], ({ scope, scopeId }: { scope: ConfigScope; scopeId: string }) => ({
      compile: () =>
        sql<{ name: string; bytes: number }>`
          select lower(name) as name, (octet_length(name) + coalesce(octet_length(value), octet_length(value_sealed), 0))::int as bytes
          from config_vars where scope = ${scope} and scope_id = ${scopeId}`.compile(db),
    }));
    this.answerOfApplicationForUser = precompiled(
      db,
      ['applicationId', 'userId', 'mask'],
      ({ applicationId, userId, mask }: { applicationId: string; userId: string; mask: string }) => ({
        compile: () =>
          sql<{ is_member: boolean; list: string | null }>`
          select access.is_member,
            case when access.is_member then coalesce((
              select json_agg(json_build_object(
                       'id', v.id, 'name', v.name, 'value', case when v.secret then ${mask}::text else coalesce(v.value, '') end,
                       'secret', v.secret, 'buildtime', v.buildtime, 'previews', v.previews,
                       'created', ${isoText('v.created_at')}, 'updated', ${isoText('v.updated_at')}) order by v.name)
              from config_vars v where v.scope = 'application' and v.scope_id = access.id), '[]')::text end as list
          from (select a.id, exists (select 1 from memberships m where m.organization_id = p.organization_id and m.user_id = ${userId}) as is_member
                from applications a join projects p on p.id = a.project_id where a.id = ${applicationId}) access`.compile(db),
      }),
    );
    this.inScope = precompiled(db, ['scope', 'scopeId'], ({ scope, scopeId }: { scope: ConfigScope; scopeId: string }) =>
      db.selectFrom('config_vars').selectAll().where('scope', '=', scope).where('scope_id', '=', scopeId).orderBy('name'),
    );
  }

  list({ scope, scopeId }: ScopeRef) {
    return this.inScope({ scope, scopeId });
  }

  /** Each variable of the scope by lowercase name, with the bytes its name and value take. */
  sizesInScope({ scope, scopeId }: ScopeRef) {
    return this.sizes({ scope, scopeId });
  }

  /**
   * The configuration list's answer (ConfigVariable[], secrets' values as `mask`) as PostgreSQL writes it,
   * when `userId` is a member of the application's organization: undefined without the application,
   * `forbidden` for a caller who is not a member.
   */
  async answerOfApplicationFor(applicationId: string, userId: string, mask: string): Promise<string | 'forbidden' | undefined> {
    const [row] = await this.answerOfApplicationForUser({ applicationId, userId, mask });
    if (!row) return undefined;
    return row.is_member ? row.list! : 'forbidden';
  }

  /**
   * What a bulk write to an application's own variables checks, in one read (issue 35): the
   * caller's membership and admin flag, the first protected environment the application reaches
   * that is locked to the caller, and the variables (count, bytes of names and values) the write
   * leaves as they are (`names`: the lowercase names it writes). Undefined without the application.
   */
  async applicationWriteChecks(applicationId: string, userId: string, names: string[]): Promise<ApplicationWriteChecks | undefined> {
    const [row] = await this.writeChecks({ applicationId, userId, names });
    return row;
  }

  find({ scope, scopeId }: ScopeRef, id: string) {
    return this.db
      .selectFrom('config_vars')
      .selectAll()
      .where('scope', '=', scope)
      .where('scope_id', '=', scopeId)
      .where('id', '=', id)
      .executeTakeFirst();
  }

  findByName({ scope, scopeId }: ScopeRef, name: string) {
    return this.db
      .selectFrom('config_vars')
      .selectAll()
      .where('scope', '=', scope)
      .where('scope_id', '=', scopeId)
      .where(sql<string>`lower(name)`, '=', name.toLowerCase())
      .executeTakeFirst();
  }

  insert(row: Insertable<ConfigVarsTable>) {
    return this.db.insertInto('config_vars').values(row).returningAll().executeTakeFirstOrThrow();
  }

  update({ scope, scopeId }: ScopeRef, id: string, changes: Updateable<ConfigVarsTable>) {
    return this.db
      .updateTable('config_vars')
      .set({ ...changes, updated_at: sql`now()` })
      .where('scope', '=', scope)
      .where('scope_id', '=', scopeId)
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst();
  }

  async delete({ scope, scopeId }: ScopeRef, id: string): Promise<boolean> {
    const res = await this.db
      .deleteFrom('config_vars')
      .where('scope', '=', scope)
      .where('scope_id', '=', scopeId)
      .where('id', '=', id)
      .executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }

  /** Every variable of the given scopes, for resolving a layered configuration. */
  listMany(scopes: ScopeRef[]) {
    if (scopes.length === 0) return Promise.resolve([]);
    return this.db
      .selectFrom('config_vars')
      .selectAll()
      .where((eb) => eb.or(scopes.map((s) => eb.and([eb('scope', '=', s.scope), eb('scope_id', '=', s.scopeId)]))))
      .execute();
  }

  transaction<T>(fn: (repo: ConfigurationsRepository) => Promise<T>): Promise<T> {
    return this.db.transaction().execute((trx) => fn(new ConfigurationsRepository(trx)));
  }
}
