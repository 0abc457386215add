import { v7 as uuidv7 } from 'uuid';
import type { AppContext } from '../../platform/context.js';
import { AppError, forbidden } from '../../platform/errors.js';
import { normalizeRepository } from '../../platform/github/github-api.js';
import { hookOrganizations } from '../../platform/github/installation-links.js';
import { GitHubInstallations, type InstallationPayload } from '../../platform/github/installations.js';
import { verifySignature } from './signature.js';

/** Starts build → release → deploy of an application at a commit (the `chain` job). */
export type ChainStarter = (
  applicationId: string,
  ref: string,
  environmentId?: string,
) => Promise<{ image_id: string; job_id: string | null }>;

/** A `pull_request` event as the previews module takes it. */
export interface PullRequestHook {
  action: string;
  number: number;
  headSha: string;
  repository: string;
  repositoryNames: string[];
  installationId: number | null;
  /** `owner/name` of the head's repository (null when GitHub no longer knows it: a deleted fork). */
  headRepository: string | null;
  /** The head is not the base repository itself: anyone on GitHub may have written it. */
  fromFork: boolean;
  /** GitHub's `repository.private`: its hooks reach only the organization of its installation. */
  repositoryPrivate: boolean;
}

/** What a hook can do beyond pushes (wired by the composition root). */
export interface HookHandlers {
  pullRequest?: (event: PullRequestHook) => Promise<unknown>;
}

interface PullRequestPayload {
  action?: string;
  number?: number;
  pull_request?: { number?: number; head?: { sha?: string; repo?: { id?: number; full_name?: string } | null } };
  repository?: PushPayload['repository'] & { id?: number };
  installation?: { id?: number };
}

export interface HookDelivery {
  event: string | undefined;
  deliveryId: string | undefined;
  signature: string | undefined;
  contentType: string | undefined;
  body: Buffer;
}

interface PushPayload {
  ref?: string;
  after?: string;
  deleted?: boolean;
  repository?: { full_name?: string; private?: boolean; clone_url?: string; ssh_url?: string; html_url?: string; git_url?: string };
  installation?: { id?: number };
}

/**
 * `POST /integrations/github/hooks`: authenticated by the HMAC signature alone. A hook
 * with a bad signature (or any hook while no secret is configured) is refused before
 * anything is stored. A `push` to the `auto_deploy_branch` of an application's
 * `github_repository` starts that application's chain at the pushed commit.
 */
export class GithubHooksService {
  private readonly installations: GitHubInstallations;

  constructor(
    private readonly ctx: AppContext,
    private readonly startChain: ChainStarter,
    private readonly handlers: HookHandlers = {},
  ) {
    this.installations = new GitHubInstallations(ctx.db);
  }

  async receive(delivery: HookDelivery): Promise<{ ok: boolean; hook_id: string }> {
    const secret = this.ctx.config.GITHUB_WEBHOOK_SECRET;
    if (!secret) throw forbidden('GitHub hooks are refused: GITHUB_WEBHOOK_SECRET is not configured');
    if (!verifySignature(secret, delivery.body, delivery.signature)) throw forbidden('Invalid X-Hub-Signature-256 signature');
    if (!delivery.event) throw new AppError('BAD_REQUEST', 'Missing X-GitHub-Event header');

    const payload = this.parse(delivery);
    if (delivery.deliveryId) {
      // GitHub redelivers on request: the same delivery never starts the pipeline twice.
      const seen = await this.ctx.db
        .selectFrom('github_hooks')
        .select('id')
        .where('delivery_id', '=', delivery.deliveryId)
        .executeTakeFirst();
      if (seen) return { ok: true, hook_id: seen.id };
    }

    const push = delivery.event === 'push' ? (payload as PushPayload) : null;
    const id = uuidv7();
    await this.ctx.db
      .insertInto('github_hooks')
      .values({
        id,
        event: delivery.event,
        delivery_id: delivery.deliveryId ?? null,
        repository: push?.repository?.full_name ?? (payload as PushPayload).repository?.full_name ?? null,
        ref: push?.ref ?? null,
        after_sha: push?.after ?? null,
        payload: JSON.stringify(payload),
      })
      .execute();

    let triggered: unknown = null;
    if (push) triggered = await this.triggerPush(push);
    else if (delivery.event === 'pull_request') triggered = await this.pullRequest(payload as PullRequestPayload);
    else if (delivery.event === 'installation' || delivery.event === 'installation_repositories')
      triggered = await this.installations.apply(delivery.event, payload as InstallationPayload);
    if (triggered !== null) {
      await this.ctx.db
        .updateTable('github_hooks')
        .set({ triggered: JSON.stringify(triggered) })
        .where('id', '=', id)
        .execute();
    }
    return { ok: true, hook_id: id };
  }

  /** opened / reopened / synchronize / closed of a pull request: its preview environments. */
  private async pullRequest(payload: PullRequestPayload) {
    const number = payload.number ?? payload.pull_request?.number;
    const headSha = payload.pull_request?.head?.sha;
    const repo = payload.repository;
    if (!this.handlers.pullRequest || !payload.action || !Number.isSafeInteger(number) || !headSha || !repo?.full_name) return [];
    return this.handlers.pullRequest({
      action: payload.action,
      number: number!,
      headSha,
      repository: repo.full_name,
      repositoryNames: [repo.full_name, repo.clone_url, repo.ssh_url, repo.html_url, repo.git_url].filter((v): v is string => Boolean(v)),
      installationId: Number.isSafeInteger(payload.installation?.id) ? payload.installation!.id! : null,
      headRepository: payload.pull_request?.head?.repo?.full_name ?? null,
      fromFork: !sameRepository(repo, payload.pull_request?.head?.repo),
      repositoryPrivate: repo.private === true,
    });
  }

  private parse(delivery: HookDelivery): unknown {
    let text = delivery.body.toString('utf8');
    // GitHub's form content type sends the JSON in a `payload` field.
    if (delivery.contentType?.startsWith('application/x-www-form-urlencoded')) text = new URLSearchParams(text).get('payload') ?? '';
    try {
      const parsed = JSON.parse(text) as unknown;
      if (!parsed || typeof parsed !== 'object') throw new Error('not an object');
      return parsed;
    } catch {
      throw new AppError('BAD_REQUEST', 'The hook payload is not a JSON object');
    }
  }

  private async triggerPush(push: PushPayload) {
    const triggered: Array<{
      application_id: string;
      environment_id?: string;
      image_id: string | null;
      job_id: string | null;
      error?: string;
    }> = [];
    if (push.deleted || !push.ref?.startsWith('refs/heads/') || !push.after || /^0+$/.test(push.after) || !push.repository)
      return triggered;
    const branch = push.ref.slice('refs/heads/'.length);
    const names = new Set(
      [push.repository.full_name, push.repository.clone_url, push.repository.ssh_url, push.repository.html_url, push.repository.git_url]
        .filter((v): v is string => Boolean(v))
        .map(normalizeRepository),
    );
    const installationId = Number.isSafeInteger(push.installation?.id) ? push.installation!.id! : null;
    const audience = await hookOrganizations(this.ctx.db, push.repository, installationId);
    if (audience && audience.only === null) return triggered;
    const candidates = await this.ctx.db
      .selectFrom('applications as a')
      .innerJoin('projects as p', 'p.id', 'a.project_id')
      .select(['a.id', 'a.github_repository'])
      .where('a.auto_deploy_branch', '=', branch)
      .where('a.github_repository', 'is not', null)
      .$if(audience !== null, (q) => q.where('p.organization_id', '=', audience!.only!))
      .execute();
    for (const app of candidates) {
      if (!names.has(normalizeRepository(app.github_repository!))) continue;
      try {
        const started = await this.startChain(app.id, push.after);
        triggered.push({ application_id: app.id, image_id: started.image_id, job_id: started.job_id });
      } catch (err) {
        triggered.push({ application_id: app.id, image_id: null, job_id: null, error: (err as Error).message });
      }
    }
    // A non-production environment with its own auto_deploy_branch deploys its services from that branch.
    const envTargets = await this.ctx.db
      .selectFrom('environments as e')
      .innerJoin('applications as a', 'a.project_id', 'e.project_id')
      .innerJoin('projects as p', 'p.id', 'e.project_id')
      .select(['a.id', 'a.github_repository', 'e.id as environment_id'])
      .$if(audience !== null, (q) => q.where('p.organization_id', '=', audience!.only!))
      .where('e.auto_deploy_branch', '=', branch)
      .where('e.slug', '!=', 'production')
      .where('e.deleted_at', 'is', null)
      .where('a.github_repository', 'is not', null)
      .execute();
    for (const target of envTargets) {
      if (!names.has(normalizeRepository(target.github_repository!))) continue;
      try {
        const started = await this.startChain(target.id, push.after, target.environment_id);
        triggered.push({
          application_id: target.id,
          environment_id: target.environment_id,
          image_id: started.image_id,
          job_id: started.job_id,
        });
      } catch (err) {
        triggered.push({
          application_id: target.id,
          environment_id: target.environment_id,
          image_id: null,
          job_id: null,
          error: (err as Error).message,
        });
      }
    }
    return triggered;
  }
}

/**
 * Whether a pull request's head is the base repository itself (a branch its writers pushed)
 * rather than a fork: by id when GitHub sends both, else by name. Unknown counts as a fork.
 */
function sameRepository(base: { id?: number; full_name?: string }, head: { id?: number; full_name?: string } | null | undefined): boolean {
  if (!head) return false;
  if (Number.isSafeInteger(base.id) && Number.isSafeInteger(head.id)) return base.id === head.id;
  return Boolean(head.full_name && base.full_name && head.full_name.toLowerCase() === base.full_name.toLowerCase());
}
