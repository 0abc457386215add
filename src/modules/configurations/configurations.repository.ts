import { sql, type Insertable, type Updateable } from 'kysely';
import type { Db } from '../../platform/db/database.js';
import { precompiled } from '../../platform/db/precompiled.js';
import type { ConfigScope, ConfigVarsTable } from '../../platform/db/schema.js';

export interface ScopeRef {
  scope: ConfigScope;
  scopeId: string;
}

export class ConfigurationsRepository {
  // The variables of a scope: read on every configuration list and every release.
  private readonly inScope;

  constructor(private readonly db: Db) {
    this.inScope = precompiled(db, ['scope', 'scopeId'], ({ scope, scopeId }: { scope: ConfigScope; scopeId: string }) =>
      db.selectFrom('config_vars').selectAll().where('scope', '=', scope).where('scope_id', '=', scopeId).orderBy('name'),
    );
  }

  list({ scope, scopeId }: ScopeRef) {
    return this.inScope({ scope, scopeId });
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
