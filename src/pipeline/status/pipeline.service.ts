import type { Db } from '../../platform/db/database.js';
import type { PipelineStep } from '../../platform/db/schema.js';
import { iso } from '../../platform/http/schemas.js';
import type { ApplicationsService } from '../../modules/applications/index.js';
import { deploymentLogStatus } from '../deploy/deployments.service.js';
import { environmentFilter, findProductionEnvironmentId, productionEnvironmentId } from '../records/index.js';
import { chosenEnvironmentId } from '../deploy/environment-choice.js';

interface FinishedRecord {
  ok: boolean;
  started_at: Date | null;
  created_at: Date;
  finished_at: Date | null;
}

const round = (n: number) => Math.round(n * 1000) / 1000;

/** Nearest-rank percentile of sorted values. */
function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

function stageMetrics(records: FinishedRecord[]) {
  const success = records.filter((r) => r.ok).length;
  const durations = records
    .filter((r) => r.finished_at)
    .map((r) => Math.max(0, (r.finished_at!.getTime() - (r.started_at ?? r.created_at).getTime()) / 1000))
    .sort((a, b) => a - b);
  const avg = durations.length ? durations.reduce((a, b) => a + b, 0) / durations.length : null;
  const p50 = percentile(durations, 50);
  const p95 = percentile(durations, 95);
  return {
    total: records.length,
    success,
    error: records.length - success,
    success_rate: records.length ? round(success / records.length) : null,
    duration: { avg: avg === null ? null : round(avg), p50: p50 === null ? null : round(p50), p95: p95 === null ? null : round(p95) },
  };
}

/** Views of an application's pipeline computed from its records (images, releases and deployments; metrics: production). */
export class PipelineService {
  constructor(
    private readonly db: Db,
    private readonly apps: ApplicationsService,
  ) {}

  /** The newest build, release and deployment: in every environment unless `environment` names one. */
  async status(userId: string, applicationId: string, environment?: string) {
    await this.apps.authorize(userId, applicationId);
    const environmentId = await environmentFilter(this.db, applicationId, environment);
    let release = this.db
      .selectFrom('releases as r')
      .select(['r.id', 'r.version', 'r.status', 'r.error_detail', 'r.build_step', 'r.updated_at', 'r.environment_slug as environment'])
      .where('r.application_id', '=', applicationId);
    let deployment = this.db
      .selectFrom('deployments as d')
      .select([
        'd.id',
        'd.release_version as version',
        'd.status',
        'd.error_detail',
        'd.deploy_step',
        'd.updated_at',
        'd.environment_slug as environment',
      ])
      .where('d.application_id', '=', applicationId);
    if (environmentId) {
      release = release.where('r.environment_id', '=', environmentId);
      deployment = deployment.where('d.environment_id', '=', environmentId);
    }
    const [image, latestRelease, latestDeployment, instances] = await Promise.all([
      this.db
        .selectFrom('images')
        .select(['id', 'version', 'status', 'error_detail', 'build_step', 'updated_at'])
        .where('application_id', '=', applicationId)
        .orderBy('version', 'desc')
        .limit(1)
        .executeTakeFirst(),
      release.orderBy('r.version', 'desc').limit(1).executeTakeFirst(),
      deployment.orderBy('d.created_at', 'desc').orderBy('d.id', 'desc').limit(1).executeTakeFirst(),
      this.instances(applicationId, environmentId ?? (await findProductionEnvironmentId(this.db, applicationId))),
    ]);
    const view = (
      r: { id: string; version: number | null; status: string; error_detail: string | null; updated_at: Date },
      step: PipelineStep | null,
    ) => ({
      id: r.id,
      version: r.version,
      status: r.status,
      error_detail: r.error_detail,
      step,
      updated: iso(r.updated_at),
    });
    return {
      build: image ? view(image, image.build_step) : null,
      release: latestRelease ? { ...view(latestRelease, latestRelease.build_step), environment: latestRelease.environment } : null,
      // A queued deployment reads `deploying`, as in its log.
      deploy: latestDeployment
        ? {
            ...view({ ...latestDeployment, status: deploymentLogStatus(latestDeployment.status) }, latestDeployment.deploy_step),
            environment: latestDeployment.environment,
          }
        : null,
      instances,
    };
  }

  /** The environment's instances in brief: how many run, which crashed and why (null: none run). */
  private async instances(applicationId: string, environmentId: string | null) {
    if (!environmentId) return null;
    const rows = await this.db
      .selectFrom('instances as i')
      .innerJoin('environments as e', 'e.id', 'i.environment_id')
      .select(['i.process_type', 'i.ordinal', 'i.state', 'i.restart_count', 'i.last_exit', 'i.last_exit_at', 'e.slug as environment'])
      .where('i.application_id', '=', applicationId)
      .where('i.environment_id', '=', environmentId)
      .orderBy('i.process_type')
      .orderBy('i.ordinal')
      .execute();
    if (rows.length === 0) return null;
    return {
      environment: rows[0]!.environment,
      running: rows.filter((r) => r.state !== 'crashed').length,
      total: rows.length,
      restarts: rows.reduce((n, r) => n + r.restart_count, 0),
      crashing: rows
        .filter((r) => r.restart_count > 0 || r.state === 'crashed')
        .map((r) => ({
          name: `${r.process_type}.${r.ordinal}`,
          state: r.state,
          restarts: r.restart_count,
          last_exit: r.last_exit,
          last_exit_at: r.last_exit_at ? iso(r.last_exit_at) : null,
        })),
    };
  }

  /** Releases and deployments of production, or of `environment` (a slug of the application's project). */
  async metrics(userId: string, applicationId: string, range = 50, environment?: string) {
    await this.apps.authorize(userId, applicationId);
    const environmentId = environment
      ? await chosenEnvironmentId(this.db, applicationId, environment)
      : await productionEnvironmentId(this.db, applicationId);
    const [images, releases, deployments] = await Promise.all([
      this.db
        .selectFrom('images')
        .select(['built as ok', 'started_at', 'created_at', 'finished_at'])
        .where('application_id', '=', applicationId)
        .where('status', 'in', ['built', 'error'])
        .orderBy('version', 'desc')
        .limit(range)
        .execute(),
      this.db
        .selectFrom('releases')
        .select(['built as ok', 'started_at', 'created_at', 'finished_at'])
        .where('application_id', '=', applicationId)
        .where('environment_id', '=', environmentId)
        .where('status', 'in', ['built', 'error'])
        .orderBy('version', 'desc')
        .limit(range)
        .execute(),
      this.db
        .selectFrom('deployments')
        .select(['complete as ok', 'started_at', 'created_at', 'finished_at'])
        .where('application_id', '=', applicationId)
        .where('environment_id', '=', environmentId)
        .where('status', 'in', ['complete', 'error'])
        .orderBy('created_at', 'desc')
        .limit(range)
        .execute(),
    ]);
    return { range, build: stageMetrics(images), release: stageMetrics(releases), deploy: stageMetrics(deployments) };
  }
}
