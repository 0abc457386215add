import type { Db } from '../../platform/db/database.js';
import { repositoryFullName, type GitHubApi } from '../../platform/github/github-api.js';
import { installationForApplication } from '../../platform/github/installation-links.js';
import type { ChainEvent, ChainObserver, ChainOutcome } from '../../pipeline/index.js';
import { findProductionEnvironmentId } from '../../platform/environments/index.js';

/**
 * GitHub's Deployments API for applications with `github_environment_name`: a chain into the
 * application's production environment creates a GitHub deployment of the commit (marked
 * `in_progress`), then `success` or `failure` with the URL the application serves at.
 */
export class GitHubDeploymentReports implements ChainObserver {
  constructor(
    private readonly db: Db,
    private readonly github: GitHubApi,
  ) {}

  private async subject(chain: ChainEvent) {
    if (!chain.commitSha) return null;
    const app = await this.db
      .selectFrom('applications')
      .select(['github_repository', 'github_app_installation_id', 'github_environment_name'])
      .where('id', '=', chain.applicationId)
      .executeTakeFirst();
    const repository = repositoryFullName(app?.github_repository);
    if (!app?.github_environment_name || !repository) return null;
    // An installation of another organization (or one unlinked since) is never acted with: no report.
    const installation = await installationForApplication(this.db, chain.applicationId, app.github_app_installation_id);
    if (app.github_app_installation_id !== null && installation === null) return null;
    if (!this.github.canReport(installation)) return null;
    if ((await findProductionEnvironmentId(this.db, chain.applicationId)) !== chain.environmentId) return null;
    return { repository, installation, environment: app.github_environment_name };
  }

  async started(chain: ChainEvent) {
    const s = await this.subject(chain);
    if (!s) return;
    await this.create(chain, s);
  }

  private async create(chain: ChainEvent, s: NonNullable<Awaited<ReturnType<GitHubDeploymentReports['subject']>>>) {
    const id = await this.github.createDeployment(s.installation, s.repository, {
      ref: chain.commitSha!,
      environment: s.environment,
      description: 'Slipway: build, release and deploy',
    });
    await this.db
      .insertInto('github_deployment_reports')
      .values({ image_id: chain.imageId, github_deployment_id: id, repository: s.repository })
      .execute();
    await this.github.deploymentStatus(s.installation, s.repository, id, { state: 'in_progress', description: 'Building and deploying' });
    return { repository: s.repository, github_deployment_id: id };
  }

  async settled(outcome: ChainOutcome) {
    let report = await this.db
      .selectFrom('github_deployment_reports')
      .selectAll()
      .where('image_id', '=', outcome.imageId)
      .executeTakeFirst();
    // A chain started without a commit (the branch's head) is reported once the build resolved it.
    if (!report) {
      const s = await this.subject(outcome);
      if (!s) return;
      report = { ...(await this.create(outcome, s)), image_id: outcome.imageId, created_at: new Date() };
    }
    const app = await this.db
      .selectFrom('applications')
      .select('github_app_installation_id')
      .where('id', '=', outcome.applicationId)
      .executeTakeFirst();
    const installation = await installationForApplication(this.db, outcome.applicationId, app?.github_app_installation_id ?? null);
    if (app?.github_app_installation_id != null && installation === null) return;
    await this.github.deploymentStatus(installation, report.repository, report.github_deployment_id, {
      state: outcome.ok ? 'success' : 'failure',
      description: outcome.ok ? 'Deployed' : (outcome.detail ?? 'The deployment failed'),
      environment_url: outcome.url,
    });
  }
}
