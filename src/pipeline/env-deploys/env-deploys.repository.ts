import { sql } from 'kysely';
import type { Db } from '../../platform/db/database.js';

export type EnvDeployRow = NonNullable<Awaited<ReturnType<EnvDeploysRepository['findById']>>>;
export type EnvDeployServiceRow = Awaited<ReturnType<EnvDeploysRepository['services']>>[number];

export class EnvDeploysRepository {
  constructor(private readonly db: Db) {}

  private base() {
    return this.db
      .selectFrom('environment_deploys as d')
      .innerJoin('environments as e', 'e.id', 'd.environment_id')
      .leftJoin('environments as src', 'src.id', 'd.source_environment_id')
      .selectAll('d')
      .select(['e.slug as environment_slug', 'src.slug as source_slug']);
  }

  findById(id: string) {
    return this.base().where('d.id', '=', id).executeTakeFirst();
  }

  find(environmentId: string, id: string) {
    return this.base().where('d.environment_id', '=', environmentId).where('d.id', '=', id).executeTakeFirst();
  }

  page(environmentId: string, limit: number, offset: number) {
    return (
      this.base()
        .where('d.environment_id', '=', environmentId)
        // Ids are time-ordered UUIDv7 taken when the request arrived: newest first, no ties.
        .orderBy('d.id', 'desc')
        .limit(limit)
        .offset(offset)
        .execute()
    );
  }

  /** The services of some env deploys with their pipeline records' state (null until a record exists). */
  services(deployIds: string[]) {
    if (deployIds.length === 0) return Promise.resolve([]);
    return this.db
      .selectFrom('environment_deploy_services as s')
      .innerJoin('applications as a', 'a.id', 's.application_id')
      .leftJoin('images as i', 'i.id', 's.image_id')
      .leftJoin('releases as r', 'r.id', 's.release_id')
      .leftJoin('deployments as dp', 'dp.id', 's.deployment_id')
      .select([
        's.environment_deploy_id',
        's.application_id',
        's.position',
        's.image_id',
        's.release_id',
        's.deployment_id',
        's.error_detail',
        'a.slug as service',
        'i.version as image_version',
        'i.status as image_status',
        'i.error_detail as image_error',
        'i.log_text as image_log',
        'i.image_id as image_digest',
        'i.job_id as image_job_id',
        'r.version as release_version',
        'r.status as release_status',
        'r.error_detail as release_error',
        'r.log_text as release_log',
        'dp.status as deployment_status',
        'dp.error_detail as deployment_error',
        'dp.deploy_log as deployment_log',
      ])
      .where('s.environment_deploy_id', 'in', deployIds)
      .orderBy('s.position')
      .execute();
  }

  insert(
    deploy: { id: string; environment_id: string; kind: 'deploy' | 'promote'; source_environment_id: string | null; requested_by: string },
    services: Array<{
      application_id: string;
      image_id?: string | null;
      release_id?: string | null;
      deployment_id?: string | null;
      error_detail?: string | null;
    }>,
  ) {
    return this.db.transaction().execute(async (trx) => {
      await trx.insertInto('environment_deploys').values(deploy).execute();
      await trx
        .insertInto('environment_deploy_services')
        .values(
          services.map((s, position) => ({
            environment_deploy_id: deploy.id,
            application_id: s.application_id,
            position,
            image_id: s.image_id ?? null,
            release_id: s.release_id ?? null,
            deployment_id: s.deployment_id ?? null,
            error_detail: s.error_detail ?? null,
          })),
        )
        .execute();
    });
  }

  /**
   * Links each service to the release and deployment its pipeline run produced: the chain
   * job that builds the image stamps its id on the release and deployment it creates.
   */
  async linkRecords(deployId: string) {
    await sql`
      update environment_deploy_services s set release_id = (
        select r.id from releases r join images i on i.id = s.image_id
        where r.job_id = i.job_id and r.application_id = s.application_id
        order by r.created_at limit 1)
      where s.environment_deploy_id = ${deployId} and s.release_id is null and s.image_id is not null`.execute(this.db);
    await sql`
      update environment_deploy_services s set deployment_id = (
        select d.id from deployments d join images i on i.id = s.image_id
        where d.job_id = i.job_id and d.release_id = s.release_id
        order by d.created_at limit 1)
      where s.environment_deploy_id = ${deployId} and s.deployment_id is null and s.release_id is not null and s.image_id is not null`.execute(
      this.db,
    );
  }

  /** Settles an env deploy once; later reads see the stored outcome. */
  settle(id: string, outcome: { status: 'complete' | 'error'; error_detail: string | null }) {
    return this.db
      .updateTable('environment_deploys')
      .set({
        status: outcome.status,
        complete: outcome.status === 'complete',
        error: outcome.status === 'error',
        error_detail: outcome.error_detail,
        updated_at: sql`now()`,
      })
      .where('id', '=', id)
      .where('status', '=', 'deploying')
      .execute();
  }

  count(environmentId: string) {
    return this.db
      .selectFrom('environment_deploys')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('environment_id', '=', environmentId)
      .executeTakeFirstOrThrow()
      .then((r) => Number(r.n));
  }
}
