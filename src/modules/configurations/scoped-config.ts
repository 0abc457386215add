import type { Db } from '../../platform/db/database.js';
import { AppError } from '../../platform/errors.js';
import { ConfigurationsRepository, type ScopeRef } from './configurations.repository.js';
import type { ConfigurationsService } from './configurations.service.js';

export interface ConfigEntry {
  name: string;
  value: string;
  secret?: boolean;
  buildtime?: boolean;
  previews?: boolean;
}

export type BulkOutcome = 'created' | 'updated' | 'skipped' | 'error';

/**
 * The workspace-group flavour of configuration (workspace, team, project, environment):
 * `set` creates or replaces a variable by name, and `bulk` takes an array of entries,
 * each with its own flags. Both delegate to ConfigurationsService, which owns storage,
 * sealing and the bulk rules (existing secrets skipped, invalid entries reported).
 */
export class ScopedConfig {
  private readonly repo: ConfigurationsRepository;

  constructor(
    db: Db,
    repo: ConfigurationsRepository,
    private readonly config: ConfigurationsService,
  ) {
    this.repo = repo;
  }

  /** Creates the variable, or replaces the value and flags of the one with that name. */
  async set(
    scope: ScopeRef,
    entry: ConfigEntry,
  ): Promise<{ created: boolean; variable: Awaited<ReturnType<ConfigurationsService['get']>> }> {
    for (let attempt = 0; ; attempt++) {
      const existing = await this.repo.findByName(scope, entry.name);
      if (existing) {
        const variable = await this.config.update(scope, existing.id, {
          value: entry.value,
          secret: entry.secret ?? existing.secret,
          buildtime: entry.buildtime ?? existing.buildtime,
          previews: entry.previews ?? existing.previews,
        });
        return { created: false, variable };
      }
      try {
        return { created: true, variable: await this.config.create(scope, entry) };
      } catch (err) {
        // Another request created the name between our look-up and insert: update it instead.
        if (err instanceof AppError && err.status === 409 && attempt === 0) continue;
        throw err;
      }
    }
  }

  /** Applies an array of entries; the last entry of a name wins. One outcome per distinct name, in input order. */
  async bulk(scope: ScopeRef, entries: ConfigEntry[]) {
    const last = new Map<string, ConfigEntry>();
    for (const e of entries) {
      last.delete(e.name.toLowerCase());
      last.set(e.name.toLowerCase(), e);
    }
    // ConfigurationsService.bulk takes one set of flags per call: group the entries by flags.
    const groups = new Map<string, { secret: boolean; buildtime: boolean; previews: boolean; variables: Record<string, string> }>();
    for (const e of last.values()) {
      const secret = e.secret ?? false;
      const buildtime = e.buildtime ?? false;
      const previews = e.previews ?? false;
      const key = `${secret}:${buildtime}:${previews}`;
      if (!groups.has(key)) groups.set(key, { secret, buildtime, previews, variables: Object.create(null) as Record<string, string> });
      groups.get(key)!.variables[e.name] = e.value;
    }
    const outcome = new Map<string, { result: BulkOutcome; message?: string }>();
    for (const g of groups.values()) {
      const r = await this.config.bulk(scope, g);
      for (const name of r.created) outcome.set(name.toLowerCase(), { result: 'created' });
      for (const name of r.updated) outcome.set(name.toLowerCase(), { result: 'updated' });
      for (const name of r.skipped)
        outcome.set(name.toLowerCase(), {
          result: 'skipped',
          message: 'an existing secret is never replaced by a bulk update; set it on its own',
        });
      for (const e of r.errors) outcome.set(e.name.toLowerCase(), { result: 'error', message: e.message });
    }
    const current = new Map((await this.config.list(scope)).map((v) => [v.name.toLowerCase(), v]));
    return [...last.values()].map((e) => {
      const o = outcome.get(e.name.toLowerCase()) ?? { result: 'error' as const, message: 'not applied' };
      const variable = o.result === 'created' || o.result === 'updated' ? current.get(e.name.toLowerCase()) : undefined;
      return { name: e.name, ...o, ...(variable ? { variable } : {}) };
    });
  }
}
