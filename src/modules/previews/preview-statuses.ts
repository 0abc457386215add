import type { Db } from '../../platform/db/database.js';
import type { GitHubApi } from '../../platform/github/github-api.js';
import { installationForApplication } from '../../platform/github/installation-links.js';
import type { ChainEvent, ChainObserver, ChainOutcome } from '../../pipeline/index.js';
import { PreviewsRepository } from './previews.repository.js';

/**
 * Commit statuses for previews: when a chain of a service built from the pull request's
 * repository starts in its preview environment, GitHub gets `pending` on the commit; when it
 * settles, `success` or `failure`, each with the service's preview URL as `target_url`
 * (context `slipway/preview/<service>`). Without an installation or GITHUB_TOKEN: nothing.
 */
export class PreviewStatuses implements ChainObserver {
  private readonly repo: PreviewsRepository;

  constructor(
    private readonly db: Db,
    repo: PreviewsRepository,
    private readonly github: GitHubApi,
    private readonly previewUrl: (applicationId: string, environmentId: string) => Promise<string | null>,
  ) {
    this.repo = repo;
  }

  private async subject(chain: ChainEvent) {
    if (!chain.commitSha || !/^[0-9a-f]{40}$/i.test(chain.commitSha)) return null;
    const preview = await this.repo.byEnvironment(chain.environmentId);
    if (!preview || preview.deleted_at || !preview.source_application_ids.includes(chain.applicationId)) return null;
    const app = await this.db
      .selectFrom('applications')
      .select(['slug', 'github_app_installation_id'])
      .where('id', '=', chain.applicationId)
      .executeTakeFirst();
    if (!app) return null;
    const named = preview.installation_id ?? app.github_app_installation_id;
    // Only an installation of the application's organization: a service of another organization
    // built from the same repository never posts with this one's installation.
    const installation = await installationForApplication(this.db, chain.applicationId, named);
    if (named !== null && installation === null) return null;
    if (!this.github.canReport(installation)) return null;
    return { preview, installation, context: `slipway/preview/${app.slug}`, sha: chain.commitSha };
  }

  async started(chain: ChainEvent) {
    const s = await this.subject(chain);
    if (!s) return;
    await this.github.commitStatus(s.installation, s.preview.repository, s.sha, {
      state: 'pending',
      context: s.context,
      description: `Deploying preview pr-${s.preview.pr_number}`,
      target_url: await this.previewUrl(chain.applicationId, chain.environmentId),
    });
  }

  async settled(outcome: ChainOutcome) {
    const s = await this.subject(outcome);
    if (!s) return;
    await this.github.commitStatus(s.installation, s.preview.repository, s.sha, {
      state: outcome.ok ? 'success' : 'failure',
      context: s.context,
      description: outcome.ok ? `Preview pr-${s.preview.pr_number} is live` : `Preview failed: ${outcome.detail ?? 'unknown reason'}`,
      target_url: outcome.url ?? (await this.previewUrl(outcome.applicationId, outcome.environmentId)),
    });
  }
}
