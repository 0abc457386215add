import type { FailureCode } from '../../platform/failures.js';
import { sql, type Updateable } from 'kysely';
import type { Db } from '../../platform/db/database.js';
import type { DeploymentsTable, PipelineStep } from '../../platform/db/schema.js';
import { countRows, findProductionEnvironmentId } from '../records/index.js';

const DEPLOY_STEPS = ['Setup', 'Release', 'Deploy', 'Rollout', 'Done'] as const;
export type DeployStepName = (typeof DEPLOY_STEPS)[number];

export const stepOf = (name: DeployStepName, substep?: string): PipelineStep => ({
  steps: [...DEPLOY_STEPS],
  current: DEPLOY_STEPS.indexOf(name),
  ...(substep ? { substep } : {}),
});

/** What a deployment needs to know about where it goes (names for the router's host). */
export interface DeployTarget {
  organizationId: string;
  projectId: string;
  applicationId: string;
  environmentId: string;
  appSlug: string;
  projectSlug: string;
  orgSlug: string;
  envSlug: string;
  /** The project's production environment is addressed without its slug. */
  isProduction: boolean;
  /** The application's own health-check timeout and stability window (seconds), null: the platform's defaults. */
  healthCheckTimeout: number | null;
  stabilityWindow: number | null;
}

export class DeploymentsRepository {
  constructor(private readonly db: Db) {}

  /** The environment application-level endpoints act on (the pipeline module's rule), or null. */
  async productionEnvironmentId(applicationId: string): Promise<string | null> {
    return findProductionEnvironmentId(this.db, applicationId);
  }

  async target(applicationId: string, environmentId: string): Promise<DeployTarget | null> {
    const row = await this.db
      .selectFrom('applications as a')
      .innerJoin('projects as p', 'p.id', 'a.project_id')
      .innerJoin('organizations as o', 'o.id', 'p.organization_id')
      .innerJoin('environments as e', (j) => j.onRef('e.project_id', '=', 'p.id').on('e.id', '=', environmentId))
      .select([
        'a.slug as app_slug',
        'p.slug as project_slug',
        'o.slug as org_slug',
        'e.slug as env_slug',
        'o.id as org_id',
        'p.id as project_id',
        'a.health_check_timeout',
        'a.stability_window',
      ])
      .where('a.id', '=', applicationId)
      // A deleted or stopped environment has nothing to run: its instances stop.
      .where('e.deleted_at', 'is', null)
      .where('e.stopped_at', 'is', null)
      .executeTakeFirst();
    if (!row) return null;
    return {
      organizationId: row.org_id,
      projectId: row.project_id,
      applicationId,
      environmentId,
      appSlug: row.app_slug,
      projectSlug: row.project_slug,
      orgSlug: row.org_slug,
      envSlug: row.env_slug,
      isProduction: (await this.productionEnvironmentId(applicationId)) === environmentId,
      healthCheckTimeout: row.health_check_timeout,
      stabilityWindow: row.stability_window,
    };
  }

  insert(values: { id: string; application_id: string; environment_id: string; release_id: string; rollback_of?: string | null }) {
    return this.db
      .insertInto('deployments')
      .values({ ...values, status: 'queued', deploy_step: JSON.stringify(stepOf('Setup')) })
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  findById(id: string) {
    return this.db.selectFrom('deployments').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** The deployments a pipeline job created. */
  idsOfJob(jobId: string) {
    return this.db.selectFrom('deployments').select('id').where('job_id', '=', jobId).execute();
  }

  update(id: string, changes: Updateable<DeploymentsTable>) {
    return this.db
      .updateTable('deployments')
      .set({ ...changes, updated_at: sql`now()` })
      .where('id', '=', id)
      .execute();
  }

  /** Settles a deployment only if it is still in progress (a restart may race a finishing worker). */
  async failIfUnfinished(id: string, detail: string, code: FailureCode, failure: object | null = null): Promise<boolean> {
    const r = await this.db
      .updateTable('deployments')
      .set({
        status: 'error',
        error: true,
        complete: false,
        error_detail: detail,
        error_code: code,
        ...(failure ? { failure: JSON.stringify(failure) } : {}),
        finished_at: sql`now()`,
        updated_at: sql`now()`,
        deploy_log: sql`deploy_log || ${`${new Date().toISOString()} error: ${detail}\n`}`,
      })
      .where('id', '=', id)
      .where('status', 'in', ['queued', 'deploying'])
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  /** A complete deployment the guard rolled back: status, detail, log line and the event, in one transaction. */
  markRolledBack(id: string, detail: string, logLine: string, event: Record<string, unknown>) {
    return this.db.transaction().execute(async (trx) => {
      const d = await trx
        .updateTable('deployments')
        .set({
          status: 'rolled_back',
          error: true,
          error_detail: detail,
          deploy_log: sql`deploy_log || ${logLine}`,
          updated_at: sql`now()`,
        })
        .where('id', '=', id)
        .where('status', '=', 'complete')
        .returning('application_id')
        .executeTakeFirst();
      if (!d) return;
      await sql`SELECT slipway_record_event(${d.application_id}, 'deployment.rolled_back', ${id}, 'rolled_back', ${JSON.stringify(event)}::jsonb)`.execute(
        trx,
      );
    });
  }

  appendLog(id: string, text: string) {
    return this.db
      .updateTable('deployments')
      .set({ deploy_log: sql`deploy_log || ${text}`, updated_at: sql`now()` })
      .where('id', '=', id)
      .execute();
  }

  /** The deployment now serving an application's environment: the latest complete one. */
  current(applicationId: string, environmentId: string) {
    return this.db
      .selectFrom('deployments')
      .selectAll()
      .where('application_id', '=', applicationId)
      .where('environment_id', '=', environmentId)
      .where('status', '=', 'complete')
      .orderBy('finished_at', 'desc')
      .orderBy('created_at', 'desc')
      .limit(1)
      .executeTakeFirst();
  }

  /** Every application environment with a complete deployment (to bring back after a restart). */
  async deployedEnvironments(): Promise<Array<{ application_id: string; environment_id: string }>> {
    return this.db
      .selectFrom('deployments')
      .select(['application_id', 'environment_id'])
      .distinct()
      .where('status', '=', 'complete')
      .execute();
  }

  /** Deployments of the application in one environment, or in all of them (null). */
  count(applicationId: string, environmentId: string | null): Promise<number> {
    return countRows(this.db, 'deployments', applicationId, environmentId);
  }

  /** Deployments with their release's commit, environment and guard: what the deployment list and detail show. */
  private withDetails() {
    return (
      this.db
        .selectFrom('deployments as d')
        .innerJoin('releases as r', 'r.id', 'd.release_id')
        // The deployment's own columns carry its release's version and environment's slug (migration 0066).
        .selectAll('d')
        .select(['r.commit_sha as release_commit_sha', 'd.environment_slug as environment'])
        .leftJoin('deployment_guards as g', 'g.deployment_id', 'd.id')
        .select([
          'g.status as guard_status',
          'g.watch_until as guard_watch_until',
          'g.settings as guard_settings',
          'g.measures as guard_measures',
          'g.breach as guard_breach',
          'g.rollback_deployment_id as guard_rollback_deployment_id',
        ])
    );
  }

  page(applicationId: string, environmentId: string | null, limit: number, offset: number) {
    let q = this.withDetails().where('d.application_id', '=', applicationId);
    if (environmentId) q = q.where('d.environment_id', '=', environmentId);
    return (
      q
        // Ids are time-ordered UUIDv7 taken when the request arrived: newest first, no ties.
        .orderBy('d.id', 'desc')
        .limit(limit)
        .offset(offset)
        .execute()
    );
  }

  withRelease(id: string) {
    return this.withDetails().where('d.id', '=', id).executeTakeFirst();
  }

  /**
   * The release a rollback goes back to by default: the newest release older than the
   * serving one that once served here (a complete deployment), so it is known to work.
   */
  previousServedRelease(applicationId: string, environmentId: string, servingVersion: number) {
    return this.db
      .selectFrom('releases as r')
      .selectAll('r')
      .where('r.application_id', '=', applicationId)
      .where('r.environment_id', '=', environmentId)
      .where('r.version', '<', servingVersion)
      .where('r.built', '=', true)
      .where((eb) =>
        eb.exists(
          eb.selectFrom('deployments as d').select('d.id').whereRef('d.release_id', '=', 'r.id').where('d.status', '=', 'complete'),
        ),
      )
      .orderBy('r.version', 'desc')
      .limit(1)
      .executeTakeFirst();
  }

  release(id: string) {
    return this.db.selectFrom('releases').selectAll().where('id', '=', id).executeTakeFirst();
  }

  image(id: string) {
    return this.db.selectFrom('images').selectAll().where('id', '=', id).executeTakeFirst();
  }
}
