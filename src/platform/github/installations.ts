import { sql } from 'kysely';
import type { Db } from '../db/database.js';

/** The parts of GitHub's `installation` / `installation_repositories` hook payloads used here. */
export interface InstallationPayload {
  action?: string;
  installation?: { id?: number; account?: { login?: string }; repository_selection?: string };
  repositories?: Array<{ full_name?: string }>;
  repositories_added?: Array<{ full_name?: string }>;
  repositories_removed?: Array<{ full_name?: string }>;
}

const names = (list: Array<{ full_name?: string }> | undefined) =>
  (list ?? []).map((r) => r.full_name?.toLowerCase()).filter((n): n is string => Boolean(n));

/**
 * Which repositories each GitHub App installation covers, as GitHub's signed hooks tell it:
 * `installation` (created / deleted / new_permissions_accepted) lists them all,
 * `installation_repositories` (added / removed) changes the list.
 */
export class GitHubInstallations {
  constructor(private readonly db: Db) {}

  /** Applies one hook event; answers what it recorded (for the hook's `triggered`). */
  async apply(event: 'installation' | 'installation_repositories', payload: InstallationPayload) {
    const id = payload.installation?.id;
    if (!Number.isSafeInteger(id)) return { installation_id: null, added: [], removed: [] };
    const installationId = id!;
    return this.db.transaction().execute(async (trx) => {
      if (event === 'installation' && payload.action === 'deleted') {
        await trx.deleteFrom('github_installation_repositories').where('installation_id', '=', installationId).execute();
        await trx.deleteFrom('github_installations').where('installation_id', '=', installationId).execute();
        // Uninstalled on GitHub: no organization holds it any more.
        await trx.deleteFrom('github_installation_links').where('installation_id', '=', installationId).execute();
        return { installation_id: installationId, added: [], removed: ['*'] };
      }
      await trx
        .insertInto('github_installations')
        .values({
          installation_id: installationId,
          account: payload.installation?.account?.login ?? null,
          repository_selection: payload.installation?.repository_selection ?? null,
        })
        .onConflict((oc) =>
          oc.column('installation_id').doUpdateSet({
            account: (eb) => eb.ref('excluded.account'),
            repository_selection: (eb) => eb.fn.coalesce('excluded.repository_selection', 'github_installations.repository_selection'),
            updated_at: sql`now()`,
          }),
        )
        .execute();
      const added = event === 'installation' ? names(payload.repositories) : names(payload.repositories_added);
      const removed = event === 'installation_repositories' ? names(payload.repositories_removed) : [];
      // `installation` lists every repository: it replaces what was known.
      if (event === 'installation')
        await trx.deleteFrom('github_installation_repositories').where('installation_id', '=', installationId).execute();
      if (removed.length)
        await trx
          .deleteFrom('github_installation_repositories')
          .where('installation_id', '=', installationId)
          .where('repository', 'in', removed)
          .execute();
      if (added.length)
        await trx
          .insertInto('github_installation_repositories')
          .values(added.map((repository) => ({ installation_id: installationId, repository })))
          .onConflict((oc) => oc.doNothing())
          .execute();
      return { installation_id: installationId, added, removed };
    });
  }

  /**
   * Whether the installation covers the repository: null when the platform never heard of the
   * installation (nothing to check against), false when its hooks say it does not.
   */
  async covers(installationId: number, repository: string): Promise<boolean | null> {
    const known = await this.db
      .selectFrom('github_installations')
      .select('repository_selection')
      .where('installation_id', '=', installationId)
      .executeTakeFirst();
    if (!known) return null;
    const row = await this.db
      .selectFrom('github_installation_repositories')
      .select('repository')
      .where('installation_id', '=', installationId)
      .where('repository', '=', repository.toLowerCase())
      .executeTakeFirst();
    return Boolean(row);
  }
}
