import type { Static } from 'typebox';
import { v7 as uuidv7 } from 'uuid';
import type { Db } from '../../platform/db/database.js';
import { invalid, notFound } from '../../platform/errors.js';
import { iso, isoOrNull, paginate, type PaginationQuery } from '../../platform/http/schemas.js';
import type { ApplicationsService } from '../applications/index.js';
import { chosenEnvironmentId } from '../../pipeline/index.js';
import { requireDeployAccess } from '../../platform/access/environment-protection.js';
import { AutoscalingRepository, type PolicyRow } from './autoscaling.repository.js';
import type { AutoscaleBody } from './autoscaling.schemas.js';

/** Only `web` receives requests through the edge, so only it can scale on requests per second. */
const REQUEST_SERVING_TYPE = 'web';
const DEFAULT_COOLDOWN_SECONDS = 300;

export function policyView(p: PolicyRow) {
  return {
    id: p.id,
    application_id: p.application_id,
    environment_id: p.environment_id,
    process_type: p.process_type,
    min: p.min_count,
    max: p.max_count,
    target: p.target_cpu_percent !== null ? { cpu_percent: p.target_cpu_percent } : { requests_per_second: p.target_rps! },
    cooldown_seconds: p.cooldown_seconds,
    last_evaluated_at: isoOrNull(p.evaluated_at),
    last_scaled_at: isoOrNull(p.last_scaled_at),
    created_at: iso(p.created_at),
    updated_at: iso(p.updated_at),
  };
}

/** The API side of autoscaling: the policies per process type, and the scale events they caused. */
export class AutoscalingService {
  private readonly repo: AutoscalingRepository;

  constructor(
    private readonly db: Db,
    repo: AutoscalingRepository,
    private readonly apps: ApplicationsService,
  ) {
    this.repo = repo;
  }

  async list(userId: string, applicationId: string, environment: string | undefined) {
    await this.apps.authorize(userId, applicationId);
    const environmentId = environment ? await chosenEnvironmentId(this.db, applicationId, environment) : null;
    return (await this.repo.list(applicationId, environmentId)).map(policyView);
  }

  async put(
    userId: string,
    applicationId: string,
    processType: string,
    environment: string | undefined,
    body: Static<typeof AutoscaleBody>,
  ) {
    await this.apps.authorize(userId, applicationId);
    const environmentId = await chosenEnvironmentId(this.db, applicationId, environment);
    // Changing how many instances run is deploying to the environment: protected ones are the admins'.
    await requireDeployAccess(this.db, userId, environmentId);
    if (body.max < body.min) throw invalid('max', `must be at least min (${body.min})`);
    const rps = 'requests_per_second' in body.target ? body.target.requests_per_second : null;
    if (rps !== null && processType !== REQUEST_SERVING_TYPE)
      throw invalid('target', `requests_per_second applies to the ${REQUEST_SERVING_TYPE} process type only (it alone receives requests)`);
    const row = await this.repo.upsert(uuidv7(), applicationId, environmentId, processType, {
      min_count: body.min,
      max_count: body.max,
      target_cpu_percent: 'cpu_percent' in body.target ? body.target.cpu_percent : null,
      target_rps: rps,
      cooldown_seconds: body.cooldown_seconds ?? DEFAULT_COOLDOWN_SECONDS,
    });
    return policyView(row);
  }

  async remove(userId: string, applicationId: string, processType: string, environment: string | undefined) {
    await this.apps.authorize(userId, applicationId);
    const environmentId = await chosenEnvironmentId(this.db, applicationId, environment);
    await requireDeployAccess(this.db, userId, environmentId);
    if (!(await this.repo.remove(applicationId, environmentId, processType))) throw notFound(`Autoscaling of '${processType}'`);
  }

  async events(userId: string, applicationId: string, query: PaginationQuery & { environment?: string }) {
    await this.apps.authorize(userId, applicationId);
    const environmentId = query.environment ? await chosenEnvironmentId(this.db, applicationId, query.environment) : null;
    return paginate(
      query,
      async (limit, offset) => ({
        total: await this.repo.countEvents(applicationId, environmentId),
        rows: await this.repo.events(applicationId, environmentId, limit, offset),
      }),
      (e) => ({
        id: e.id,
        application_id: e.application_id,
        environment_id: e.environment_id,
        process_type: e.process_type,
        from: e.from_count,
        to: e.to_count,
        reason: e.reason,
        metric: e.metric as Record<string, number | null>,
        created_at: iso(e.created_at),
      }),
    );
  }
}
