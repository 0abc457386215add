import type { Db } from '../../platform/db/database.js';

/** Reads for the streams: the current log text and status of a record, events after an id. */
export class StreamsRepository {
  constructor(private readonly db: Db) {}

  image(id: string) {
    return this.db
      .selectFrom('images')
      .select(['application_id', 'log_text as text', 'status', 'error_detail', 'updated_at'])
      .where('id', '=', id)
      .executeTakeFirst();
  }

  deployment(id: string) {
    return this.db
      .selectFrom('deployments')
      .select(['application_id', 'deploy_log as text', 'status', 'error_detail', 'updated_at'])
      .where('id', '=', id)
      .executeTakeFirst();
  }

  run(id: string) {
    return this.db
      .selectFrom('one_off_runs')
      .select(['application_id', 'log_text as text', 'status', 'error_detail', 'exit_code', 'updated_at'])
      .where('id', '=', id)
      .executeTakeFirst();
  }

  /** An environment deploy's status and, per service in order, its three logs and their record ids. */
  async environmentDeploy(id: string) {
    const deploy = await this.db
      .selectFrom('environment_deploys')
      .select(['id', 'kind', 'status', 'error_detail', 'updated_at'])
      .where('id', '=', id)
      .executeTakeFirst();
    if (!deploy) return undefined;
    const services = await this.db
      .selectFrom('environment_deploy_services as s')
      .innerJoin('applications as a', 'a.id', 's.application_id')
      .leftJoin('images as i', 'i.id', 's.image_id')
      .leftJoin('releases as r', 'r.id', 's.release_id')
      .leftJoin('deployments as dp', 'dp.id', 's.deployment_id')
      .select([
        'a.slug as service',
        's.image_id',
        's.release_id',
        's.deployment_id',
        'i.log_text as image_log',
        'i.status as image_status',
        'r.log_text as release_log',
        'r.status as release_status',
        'dp.deploy_log as deployment_log',
        'dp.status as deployment_status',
      ])
      .where('s.environment_deploy_id', '=', id)
      .orderBy('s.position')
      .execute();
    return { ...deploy, services };
  }

  eventsAfter(applicationId: string, afterId: number, limit: number) {
    return this.db
      .selectFrom('application_events')
      .selectAll()
      .where('application_id', '=', applicationId)
      .where('id', '>', afterId)
      .orderBy('id')
      .limit(limit)
      .execute();
  }

  async lastEventId(applicationId: string): Promise<number> {
    const row = await this.db
      .selectFrom('application_events')
      .select((eb) => eb.fn.max('id').as('id'))
      .where('application_id', '=', applicationId)
      .executeTakeFirst();
    return Number(row?.id ?? 0);
  }
}
