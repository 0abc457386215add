import { GitHubApp, GitHubAppError } from './github-app.js';

export interface GitHubApiSettings {
  GITHUB_API_URL: string;
  /** A personal access token, used where no App installation covers the repository. */
  GITHUB_TOKEN?: string;
}

export type CommitState = 'pending' | 'success' | 'failure' | 'error';
export type DeploymentState = 'in_progress' | 'success' | 'failure' | 'error';

/** Compares repository addresses the way people write them: case-insensitive, without `.git` or a trailing slash. */
export function normalizeRepository(value: string): string {
  return value
    .trim()
    .toLowerCase()
    .replace(/\/+$/, '')
    .replace(/\.git$/, '');
}

/** The `owner/name` of a repository from how applications store it (full name or URL), or null. */
export function repositoryFullName(value: string | null | undefined): string | null {
  if (!value) return null;
  const trimmed = value
    .trim()
    .replace(/\/+$/, '')
    .replace(/\.git$/, '');
  const match = /^(?:(?:https?|ssh|git):\/\/[^/]+\/|git@[^:]+:)?([A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+)$/.exec(trimmed);
  return match ? match[1]!.toLowerCase() : null;
}

/**
 * The few GitHub REST calls the platform makes on a repository's behalf (commit statuses,
 * deployments), authenticated with the App's installation token when the repository has an
 * installation, else with the operator's personal token. Without either it does nothing.
 */
export class GitHubApi {
  constructor(
    private readonly settings: GitHubApiSettings,
    private readonly app: GitHubApp,
  ) {}

  /** Whether calls can be authenticated for a repository with this installation (or none). */
  canReport(installationId: number | null): boolean {
    return Boolean((installationId && this.app.configured) || this.settings.GITHUB_TOKEN);
  }

  private async token(installationId: number | null): Promise<string> {
    if (installationId && this.app.configured) return this.app.installationToken(installationId);
    if (this.settings.GITHUB_TOKEN) return this.settings.GITHUB_TOKEN;
    throw new GitHubAppError('no GitHub App installation or GITHUB_TOKEN to report to GitHub with');
  }

  private async call<T>(installationId: number | null, method: string, path: string, body: unknown): Promise<T> {
    const res = await fetch(`${this.settings.GITHUB_API_URL.replace(/\/+$/, '')}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${await this.token(installationId)}`,
        accept: 'application/vnd.github+json',
        'content-type': 'application/json',
        'x-github-api-version': '2022-11-28',
        'user-agent': 'slipway',
      },
      body: JSON.stringify(body),
    });
    const answer = (await res.json().catch(() => ({}))) as T & { message?: string };
    if (!res.ok)
      throw new GitHubAppError(`GitHub answered ${res.status} to ${method} ${path}${answer.message ? `: ${answer.message}` : ''}`);
    return answer;
  }

  /** `POST /repos/{repo}/statuses/{sha}`. */
  async commitStatus(
    installationId: number | null,
    repository: string,
    sha: string,
    status: { state: CommitState; context: string; description: string; target_url?: string | null },
  ): Promise<void> {
    const { target_url, ...rest } = status;
    await this.call(installationId, 'POST', `/repos/${repository}/statuses/${encodeURIComponent(sha)}`, {
      ...rest,
      description: rest.description.slice(0, 140),
      ...(target_url ? { target_url } : {}),
    });
  }

  /** `POST /repos/{repo}/deployments`: answers GitHub's deployment id. */
  async createDeployment(
    installationId: number | null,
    repository: string,
    deployment: { ref: string; environment: string; description: string },
  ): Promise<number> {
    const created = await this.call<{ id: number }>(installationId, 'POST', `/repos/${repository}/deployments`, {
      ...deployment,
      auto_merge: false,
      required_contexts: [],
    });
    return created.id;
  }

  /** `POST /repos/{repo}/deployments/{id}/statuses`. */
  async deploymentStatus(
    installationId: number | null,
    repository: string,
    deploymentId: number,
    status: { state: DeploymentState; description: string; environment_url?: string | null },
  ): Promise<void> {
    const { environment_url, ...rest } = status;
    await this.call(installationId, 'POST', `/repos/${repository}/deployments/${deploymentId}/statuses`, {
      ...rest,
      description: rest.description.slice(0, 140),
      ...(environment_url ? { environment_url } : {}),
    });
  }
}
