import type { Static } from 'typebox';
import { v7 as uuidv7 } from 'uuid';
import type { Db } from '../../platform/db/database.js';
import { invalid, notFound } from '../../platform/errors.js';
import { iso, isoOrNull, type PaginationQuery } from '../../platform/http/schemas.js';
import type { ApplicationsService } from '../applications/index.js';
import { chosenEnvironmentId, DEFAULT_RUN_TIMEOUT_SECONDS, type OneOffRunsService } from '../../pipeline/index.js';
import { requireDeployAccess } from '../../platform/access/environment-protection.js';
import { CronScheduleError, nextOccurrence } from '../../platform/cron/schedule.js';
import { CronRepository, type CronEntryRow } from './cron.repository.js';
import type { CronBody } from './cron.schemas.js';

export function cronEntryView(e: CronEntryRow) {
  return {
    id: e.id,
    application_id: e.application_id,
    environment_id: e.environment_id,
    name: e.name,
    schedule: e.schedule,
    command: e.command,
    process_type: e.process_type,
    timeout_seconds: e.timeout_seconds,
    source: e.source,
    next_run_at: isoOrNull(e.next_run_at),
    created_at: iso(e.created_at),
    updated_at: iso(e.updated_at),
  };
}

/** The API side of scheduled jobs: entries per application environment and the runs they started. */
export class CronService {
  private readonly repo: CronRepository;

  constructor(
    private readonly db: Db,
    repo: CronRepository,
    private readonly apps: ApplicationsService,
    private readonly runs: OneOffRunsService,
    private readonly allowSeconds: boolean,
  ) {
    this.repo = repo;
  }

  async list(userId: string, applicationId: string, environment: string | undefined) {
    await this.apps.authorize(userId, applicationId);
    const environmentId = environment ? await chosenEnvironmentId(this.db, applicationId, environment) : null;
    return (await this.repo.list(applicationId, environmentId)).map(cronEntryView);
  }

  async put(userId: string, applicationId: string, name: string, environment: string | undefined, body: Static<typeof CronBody>) {
    await this.apps.authorize(userId, applicationId);
    const environmentId = await chosenEnvironmentId(this.db, applicationId, environment);
    // Its runs execute code in the environment: as a one-off run, a protected one is the admins'.
    await requireDeployAccess(this.db, userId, environmentId);
    let next: Date;
    try {
      next = nextOccurrence(body.schedule, await this.repo.now(), this.allowSeconds);
    } catch (err) {
      if (err instanceof CronScheduleError) throw invalid('schedule', err.message);
      throw err;
    }
    const row = await this.repo.upsert({
      id: uuidv7(),
      application_id: applicationId,
      environment_id: environmentId,
      name,
      schedule: body.schedule.trim(),
      command: body.command,
      process_type: body.process_type ?? null,
      timeout_seconds: body.timeout_seconds ?? DEFAULT_RUN_TIMEOUT_SECONDS,
      next_run_at: next,
    });
    return cronEntryView(row);
  }

  async remove(userId: string, applicationId: string, name: string, environment: string | undefined) {
    const entry = await this.visible(userId, applicationId, name, environment);
    await requireDeployAccess(this.db, userId, entry.environment_id);
    await this.repo.remove(entry.id);
  }

  async runsOf(userId: string, applicationId: string, name: string, query: PaginationQuery & { environment?: string }) {
    const entry = await this.visible(userId, applicationId, name, query.environment);
    return this.runs.cronRuns(entry.id, query);
  }

  private async visible(userId: string, applicationId: string, name: string, environment: string | undefined) {
    await this.apps.authorize(userId, applicationId);
    const environmentId = await chosenEnvironmentId(this.db, applicationId, environment);
    const entry = await this.repo.find(applicationId, environmentId, name);
    if (!entry) throw notFound(`Cron entry '${name}'`);
    return entry;
  }
}
