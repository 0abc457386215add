import { sql } from 'kysely';
import type { Db } from '../../platform/db/database.js';
import type { ScopeRef } from './configurations.repository.js';

/** Deletes every variable of a scope (its owner is being deleted); runs in the caller's transaction when given one. */
export async function deleteScopeVariables(db: Db, scope: ScopeRef): Promise<void> {
  await db.deleteFrom('config_vars').where('scope', '=', scope.scope).where('scope_id', '=', scope.scopeId).execute();
}

/** Copies an environment's variables to another (a preview from its template), secrets only when asked. */
export async function copyEnvironmentVariables(db: Db, fromEnvironmentId: string, toEnvironmentId: string, copySecrets: boolean) {
  let vars = db
    .selectFrom('config_vars')
    .select((eb) => [
      sql<string>`gen_random_uuid()`.as('id'),
      eb.val('environment').as('scope'),
      eb.val(toEnvironmentId).as('scope_id'),
      'name',
      'value',
      'value_sealed',
      'secret',
      'buildtime',
      'previews',
    ])
    .where('scope', '=', 'environment')
    .where('scope_id', '=', fromEnvironmentId);
  if (!copySecrets) vars = vars.where('secret', '=', false);
  await db
    .insertInto('config_vars')
    .columns(['id', 'scope', 'scope_id', 'name', 'value', 'value_sealed', 'secret', 'buildtime', 'previews'])
    .expression(vars)
    .execute();
}
