import type { Db } from '../../platform/db/database.js';

/** compose_imports: which application or add-on each service of a project's Compose file became. */
export class ComposeImportsRepository {
  constructor(private readonly db: Db) {}

  async forProject(projectId: string) {
    const rows = await this.db
      .selectFrom('compose_imports')
      .select(['service', 'application_id', 'addon_id', 'image'])
      .where('project_id', '=', projectId)
      .execute();
    return new Map(rows.map((r) => [r.service, r]));
  }

  async record(projectId: string, service: string, target: { applicationId?: string; addonId?: string; image?: string | null }) {
    const values = { application_id: target.applicationId ?? null, addon_id: target.addonId ?? null, image: target.image ?? null };
    await this.db
      .insertInto('compose_imports')
      .values({ project_id: projectId, service, ...values })
      .onConflict((oc) => oc.columns(['project_id', 'service']).doUpdateSet({ ...values, imported_at: new Date() }))
      .execute();
  }
}
