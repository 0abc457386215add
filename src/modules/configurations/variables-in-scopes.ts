import type { Db } from '../../platform/db/database.js';
import { ConfigurationsRepository, type ScopeRef } from './configurations.repository.js';

/** Every variable of the given scopes (values of secrets stay sealed), for views that show layering. */
export function variablesInScopes(db: Db, scopes: ScopeRef[]) {
  return new ConfigurationsRepository(db).listMany(scopes);
}
