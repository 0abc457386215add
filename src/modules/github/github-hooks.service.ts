import { v7 as uuidv7 } from 'uuid';
import type { AppContext } from '../../platform/context.js';
import { AppError, forbidden } from '../../platform/errors.js';
import { verifySignature } from './signature.js';

/** Starts build → release → deploy of an application at a commit (the `chain` job). */
export type ChainStarter = (
  applicationId: string,
  ref: string,
  environmentId?: string,
) => Promise<{ image_id: string; job_id: string | null }>;

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
  repository?: { full_name?: string; clone_url?: string; ssh_url?: string; html_url?: string; git_url?: string };
}

/** Compares repository addresses the way people write them: case-insensitive, without `.git` or a trailing slash. */
function normalizeRepository(value: string): string {
  return value
    .trim()
    .toLowerCase()
    .replace(/\/+$/, '')
    .replace(/\.git$/, '');
}

/**
 * `POST /integrations/github/hooks`: authenticated by the HMAC signature alone. A hook
 * with a bad signature (or any hook while no secret is configured) is refused before
 * anything is stored. A `push` to the `auto_deploy_branch` of an application's
 * `github_repository` starts that application's chain at the pushed commit.
 */
export class GithubHooksService {
  constructor(
    private readonly ctx: AppContext,
    private readonly startChain: ChainStarter,
  ) {}

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

    if (push) {
      const triggered = await this.triggerPush(push);
      await this.ctx.db
        .updateTable('github_hooks')
        .set({ triggered: JSON.stringify(triggered) })
        .where('id', '=', id)
        .execute();
    }
    return { ok: true, hook_id: id };
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
    const candidates = await this.ctx.db
      .selectFrom('applications')
      .select(['id', 'github_repository'])
      .where('auto_deploy_branch', '=', branch)
      .where('github_repository', 'is not', null)
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
      .select(['a.id', 'a.github_repository', 'e.id as environment_id'])
      .where('e.auto_deploy_branch', '=', branch)
      .where('e.slug', '!=', 'production')
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
