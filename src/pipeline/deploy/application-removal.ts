import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { AppContext } from '../../platform/context.js';
import { AppError } from '../../platform/errors.js';
import { requireProtectedEnvironmentAdmin } from '../../platform/access/environment-protection.js';
import { requireJobs } from '../../platform/jobs/require-jobs.js';
import { publishWebhookEvent } from '../../platform/webhook-events.js';
import type { ApplicationsService } from '../../modules/applications/index.js';
import { applicationArtifactsDir } from '../build/build-runner.js';
import { pushRepositoryDir } from '../../platform/git/push-repository.js';

/** How long a delete waits for the application's running pipeline job to stop after its cancel. */
const SETTLE_TIMEOUT_MS = 60_000;

/**
 * `DELETE /applications/{id}`: the application's pipeline jobs are cancelled, its instances
 * stopped and unrouted in every environment, and only then its records deleted (they cascade
 * from `applications`). A crash half-way leaves the application in place: deleting it again
 * finishes the work, every step being idempotent. Add-ons stay in the organization (their
 * attachments cascade).
 */
export class ApplicationRemoval {
  constructor(
    private readonly ctx: AppContext,
    private readonly apps: ApplicationsService,
  ) {}

  async remove(user: { id: string; username: string }, applicationId: string): Promise<void> {
    const app = await this.apps.authorize(user.id, applicationId);
    await requireProtectedEnvironmentAdmin(this.ctx.db, user.id, { applicationId: app.id }, 'whether an application it runs exists');
    await this.cancelJobs(app.id, `Cancelled: application ${app.slug} deleted by ${user.username}`);
    await this.stopInstances(app);
    await this.ctx.db.transaction().execute(async (tx) => {
      await tx.deleteFrom('applications').where('id', '=', app.id).execute();
      await publishWebhookEvent(tx, {
        organizationId: app.organization_id,
        projectId: app.project_id,
        event: 'application.deleted',
        data: { application: { id: app.id, slug: app.slug, name: app.name }, by: user.username },
      });
    });
    // The build artifacts (source snapshots, image roots) no record names any more, and the rest of
    // its files: no organization's usage counts them once the application is gone.
    const { dataDir, BUILDAH_STORAGE_ROOT } = this.ctx.config;
    await rm(applicationArtifactsDir(dataDir, app.id), { recursive: true, force: true });
    await rm(pushRepositoryDir(dataDir, app.id), { recursive: true, force: true });
    await rm(join(dataDir, 'cache', 'apps', app.id), { recursive: true, force: true });
    await rm(join(BUILDAH_STORAGE_ROOT ?? join(dataDir, 'containers'), 'apps', app.id), { recursive: true, force: true }).catch(
      (err: unknown) => this.ctx.logger?.error({ err, applicationId: app.id }, "removing the deleted application's build storage failed"),
    );
  }

  /** Stops and unroutes its instances in every environment of its project (deleted ones too). */
  private async stopInstances(app: { id: string; project_id: string }) {
    const runtime = this.ctx.runtime;
    if (!runtime) {
      // A process without a runtime (role `api`) cannot stop instances a worker runs: refuse only when some exist.
      const running = await this.ctx.db
        .selectFrom('instances')
        .select('id')
        .where('application_id', '=', app.id)
        .where('state', '!=', 'stopped')
        .executeTakeFirst();
      if (running)
        throw new AppError('UNAVAILABLE', 'Deleting a running application needs a process with a runtime (role `all` or `worker`)');
      return;
    }
    const environments = await this.ctx.db.selectFrom('environments').select('id').where('project_id', '=', app.project_id).execute();
    const signal = AbortSignal.timeout(SETTLE_TIMEOUT_MS);
    // With no plan, a reconcile stops every instance of the target and removes its routes.
    for (const { id } of environments) await runtime.reconcile({ applicationId: app.id, environmentId: id }, null, signal);
  }

  /**
   * Cancels the application's waiting and running pipeline jobs until none is left (a
   * cancelled deploy may queue a reconcile on its way out: that one goes too).
   */
  private async cancelJobs(applicationId: string, message: string) {
    const live = () =>
      this.ctx.db
        .selectFrom('pipeline_jobs')
        .select('id')
        .where('application_id', '=', applicationId)
        .where('state', 'in', ['created', 'active'])
        .execute();
    const deadline = Date.now() + SETTLE_TIMEOUT_MS;
    const cancelled = new Set<string>();
    for (let jobs = await live(); jobs.length > 0; jobs = await live()) {
      if (Date.now() > deadline)
        throw new AppError('CONFLICT', "The application's running pipeline job did not stop in time: delete it again shortly");
      for (const { id } of jobs) {
        if (cancelled.has(id)) continue;
        cancelled.add(id);
        await requireJobs(this.ctx).cancel(id, message);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
