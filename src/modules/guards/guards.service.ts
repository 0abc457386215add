import type { Db } from '../../platform/db/database.js';
import type { GuardSettings } from '../../platform/db/schema.js';
import { invalid, notFound } from '../../platform/errors.js';
import type { ApplicationsService } from '../applications/index.js';
import { chosenEnvironmentId } from '../../pipeline/index.js';
import { requireDeployAccess } from '../../platform/access/environment-protection.js';
import { GuardsRepository } from './guards.repository.js';

export const DEFAULT_WINDOW_SECONDS = 300;
export const DEFAULT_MIN_REQUESTS = 20;

export type GuardSettingsInput = Partial<GuardSettings> & { environment?: string };

/** The guard settings of an application environment (changing them is deploying there: same access). */
export class GuardsService {
  private readonly repo: GuardsRepository;

  constructor(
    private readonly db: Db,
    repo: GuardsRepository,
    private readonly apps: ApplicationsService,
  ) {
    this.repo = repo;
  }

  async get(userId: string, applicationId: string, environment: string | undefined) {
    await this.apps.authorize(userId, applicationId);
    const environmentId = await chosenEnvironmentId(this.db, applicationId, environment);
    const row = await this.repo.settings(applicationId, environmentId);
    if (!row) throw notFound('Guard of that environment');
    return view(row, environmentId);
  }

  async put(userId: string, applicationId: string, body: GuardSettingsInput) {
    await this.apps.authorize(userId, applicationId);
    const environmentId = await chosenEnvironmentId(this.db, applicationId, body.environment);
    await requireDeployAccess(this.db, userId, environmentId);
    const settings: GuardSettings = {
      window_seconds: body.window_seconds ?? DEFAULT_WINDOW_SECONDS,
      max_error_ratio: body.max_error_ratio ?? null,
      max_p95_factor: body.max_p95_factor ?? null,
      max_restarts: body.max_restarts ?? null,
      min_requests: body.min_requests ?? DEFAULT_MIN_REQUESTS,
    };
    if (settings.max_error_ratio === null && settings.max_p95_factor === null && settings.max_restarts === null)
      throw invalid('max_error_ratio', 'a guard needs at least one threshold: max_error_ratio, max_p95_factor or max_restarts');
    return view(await this.repo.saveSettings(applicationId, environmentId, settings), environmentId);
  }

  async remove(userId: string, applicationId: string, environment: string | undefined) {
    await this.apps.authorize(userId, applicationId);
    const environmentId = await chosenEnvironmentId(this.db, applicationId, environment);
    await requireDeployAccess(this.db, userId, environmentId);
    if (!(await this.repo.deleteSettings(applicationId, environmentId))) throw notFound('Guard of that environment');
    return { ok: true };
  }
}

function view(row: GuardSettings & { updated_at: Date }, environmentId: string) {
  return {
    environment_id: environmentId,
    window_seconds: row.window_seconds,
    max_error_ratio: row.max_error_ratio,
    max_p95_factor: row.max_p95_factor,
    max_restarts: row.max_restarts,
    min_requests: row.min_requests,
    updated: row.updated_at.toISOString(),
  };
}
