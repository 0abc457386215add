import { copyServiceSettings, insertPreviewEnvironment, resumeEnvironment, reviveEnvironment } from '../environments/index.js';
import { copyEnvironmentVariables } from '../configurations/index.js';
import { sql } from 'kysely';
import type { Db } from '../../platform/db/database.js';
import type { PreviewTrust } from '../../platform/db/schema.js';

export type PreviewSettingsRow = NonNullable<Awaited<ReturnType<PreviewsRepository['settings']>>>;

/** Preview settings, preview rows and the environments they own. */
export class PreviewsRepository {
  constructor(private readonly db: Db) {}

  settings(projectId: string) {
    return this.db
      .selectFrom('preview_settings as s')
      .innerJoin('environments as e', 'e.id', 's.template_environment_id')
      .select([
        's.project_id',
        's.template_environment_id',
        'e.slug as template_slug',
        's.max_concurrent',
        's.copy_secrets',
        's.updated_at',
      ])
      .where('s.project_id', '=', projectId)
      .where('e.deleted_at', 'is', null)
      .executeTakeFirst();
  }

  saveSettings(values: { project_id: string; template_environment_id: string; max_concurrent: number; copy_secrets: boolean }) {
    return this.db
      .insertInto('preview_settings')
      .values(values)
      .onConflict((oc) =>
        oc.column('project_id').doUpdateSet({
          template_environment_id: values.template_environment_id,
          max_concurrent: values.max_concurrent,
          copy_secrets: values.copy_secrets,
          updated_at: sql`now()`,
        }),
      )
      .execute();
  }

  clearSettings(projectId: string) {
    return this.db.deleteFrom('preview_settings').where('project_id', '=', projectId).execute();
  }

  /** The project's previews (not deleted), most recently active first. */
  list(projectId: string) {
    return this.db
      .selectFrom('previews as p')
      .innerJoin('environments as e', 'e.id', 'p.environment_id')
      .select([
        'p.environment_id',
        'e.slug',
        'e.stopped_at',
        'p.pr_number',
        'p.repository',
        'p.head_sha',
        'p.trust',
        'p.head_repository',
        'p.active_at',
        'p.created_at',
      ])
      .where('p.project_id', '=', projectId)
      .where('e.deleted_at', 'is', null)
      .orderBy('p.active_at', 'desc')
      .execute();
  }

  /** The preview environment of a pull request in a project, deleted or not. */
  find(projectId: string, slug: string) {
    return this.db
      .selectFrom('environments as e')
      .leftJoin('previews as p', 'p.environment_id', 'e.id')
      .select(['e.id', 'e.deleted_at', 'e.stopped_at', 'p.environment_id as preview_of'])
      .where('e.project_id', '=', projectId)
      .where('e.slug', '=', slug)
      .executeTakeFirst();
  }

  /** A preview row by its environment (with its project's organization), or undefined. */
  byEnvironment(environmentId: string) {
    return this.db
      .selectFrom('previews as p')
      .innerJoin('environments as e', 'e.id', 'p.environment_id')
      .select([
        'p.environment_id',
        'p.pr_number',
        'p.repository',
        'p.head_sha',
        'p.installation_id',
        'p.source_application_ids',
        'e.deleted_at',
      ])
      .where('p.environment_id', '=', environmentId)
      .executeTakeFirst();
  }

  /**
   * A new environment `pr-<n>` from the template: its configuration (secrets only when
   * `copySecrets`) and its per-service process settings. One transaction.
   */
  async createFromTemplate(input: { projectId: string; slug: string; name: string; templateId: string; copySecrets: boolean }) {
    return this.db.transaction().execute(async (trx) => {
      const id = await insertPreviewEnvironment(trx, { projectId: input.projectId, slug: input.slug, name: input.name });
      await copyEnvironmentVariables(trx, input.templateId, id, input.copySecrets);
      await copyServiceSettings(trx, input.templateId, id);
      return id;
    });
  }

  /** Brings back a closed preview's environment (its retained records join the new ones). */
  revive(environmentId: string) {
    return reviveEnvironment(this.db, environmentId);
  }

  resume(environmentId: string) {
    return resumeEnvironment(this.db, environmentId);
  }

  savePreview(values: {
    environment_id: string;
    project_id: string;
    pr_number: number;
    repository: string;
    head_sha: string;
    installation_id: number | null;
    source_application_ids: string[];
    trust: PreviewTrust;
    head_repository: string | null;
  }) {
    const row = { ...values, source_application_ids: JSON.stringify(values.source_application_ids) };
    return this.db
      .insertInto('previews')
      .values(row)
      .onConflict((oc) =>
        oc.column('environment_id').doUpdateSet({
          repository: row.repository,
          head_sha: row.head_sha,
          installation_id: row.installation_id,
          source_application_ids: row.source_application_ids,
          // Once a fork's, always a fork's: a later hook never widens what the environment was given.
          trust: sql<PreviewTrust>`case when previews.trust = 'fork' then 'fork' else ${row.trust} end`,
          head_repository: row.head_repository,
          active_at: sql`now()`,
        }),
      )
      .execute();
  }

  /** Running previews of the project other than `exceptId`, least recently active first. */
  running(projectId: string, exceptId: string) {
    return this.db
      .selectFrom('previews as p')
      .innerJoin('environments as e', 'e.id', 'p.environment_id')
      .select(['p.environment_id', 'e.slug'])
      .where('p.project_id', '=', projectId)
      .where('p.environment_id', '!=', exceptId)
      .where('e.deleted_at', 'is', null)
      .where('e.stopped_at', 'is', null)
      .orderBy('p.active_at')
      .execute();
  }

  /** Records `preview.created` / `preview.deleted` as an application event of each service (streams and webhooks read these). */
  async recordEvent(
    applicationIds: string[],
    kind: 'preview.created' | 'preview.deleted',
    environmentId: string,
    data: Record<string, unknown>,
  ) {
    for (const app of applicationIds) {
      await sql`SELECT slipway_record_event(${app}::uuid, ${kind}, ${environmentId}, ${kind.slice('preview.'.length)}, ${JSON.stringify(data)}::jsonb)`.execute(
        this.db,
      );
    }
  }
}
