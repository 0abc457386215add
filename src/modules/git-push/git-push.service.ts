import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, open, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { sql } from 'kysely';
import type { AppContext } from '../../platform/context.js';
import { AppError } from '../../platform/errors.js';
import { requireDeployAccess, requireProtectedEnvironmentAdmin } from '../../platform/access/environment-protection.js';
import { runHttpBackend } from '../../platform/git/http-backend.js';
import { bandPkt, FLUSH, parsePushCommands, pkt, PktReader, ZERO_SHA, type RefUpdate } from '../../platform/git/pkt-line.js';
import { preparePushRepository, pushRepositoriesRoot, restoreRef } from '../../platform/git/push-repository.js';
import { requireJobRoom } from '../../platform/jobs/require-jobs.js';
import type { Principal } from '../../platform/http/types.js';
import { checkScope } from '../../platform/access/key-scope.js';
import { checkRouteAccess } from '../../platform/access/route-access.js';
import type { ApplicationsService } from '../applications/index.js';
import type { AuthService } from '../auth/index.js';
import { followChain } from './chain-follower.js';

/** Starts build → release → deploy of a pushed commit in an environment (DeployChain.start). */
export type PushChainStarter = (
  applicationId: string,
  commitSha: string,
  environmentId: string,
) => Promise<{ image_id: string; job_id: string | null }>;

export interface GitPushDeps {
  ctx: AppContext;
  auth: Pick<AuthService, 'fromApiKey'>;
  apps: Pick<ApplicationsService, 'authorize'>;
  startChain: PushChainStarter;
  /** Refuses (throws) when the application's organization is over its disk quota. */
  requireBuildRoom: (applicationId: string) => Promise<void>;
  /** Bytes the application's organization may still store (null: no quota); bounds what a push may spool. */
  roomLeft: (applicationId: string) => Promise<number | null>;
}

/** Most bytes of a receive-pack request read for its ref updates (the pack follows them). */
const MAX_COMMAND_BYTES = 256 * 1024;
const APPLICATION_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A refusal told to a git client: the HTTP status of a request it cannot go on with, and why. */
export class PushRefused extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** What a push answers, written by the route onto the raw response. */
export interface PushResponse {
  write(chunk: Buffer): void;
  end(): void;
  /** Whether the client hung up (its push goes on deploying; nobody is left to tell). */
  closed(): boolean;
}

interface Target {
  environmentId: string;
  slug: string;
}

/**
 * `git push` to an application's repository on this server (issue 34), over smart HTTP through
 * Git's own `git http-backend`. The password of HTTP Basic is an API key; the caller must be a
 * member of the application's organization, and may deploy to the environment each pushed
 * branch deploys to. Accepted branches build and deploy as a `git push` waits, the logs sent
 * back on git's progress band ("remote: ..."); a failed build or deploy rejects the branch
 * (and moves it back), so `git push` exits non-zero.
 */
export class GitPushService {
  /** Per application, the pushes this process receives or holds waiting (one at a time). */
  private readonly incoming = new Map<string, { tail: Promise<void>; pushes: number }>();

  constructor(private readonly deps: GitPushDeps) {}

  private get ctx() {
    return this.deps.ctx;
  }

  /** The caller and the application, or a refusal that says why. */
  async authorize(authorization: string | undefined, repository: string) {
    const applicationId = repository.replace(/\.git$/, '');
    if (!APPLICATION_ID.test(applicationId)) throw new PushRefused(404, 'No such repository: push to /git/<application id>.git');
    const key = basicPassword(authorization);
    const principal: Principal | null = key ? await this.deps.auth.fromApiKey(key) : null;
    if (!principal) throw new PushRefused(401, 'Authentication required: use an API key as the password');
    return this.authorizePrincipal(principal, applicationId);
  }

  /** The application, when this caller (known by API key, or by SSH key) may push to it; else a refusal that says why. */
  async authorizePrincipal(principal: Principal, applicationId: string) {
    try {
      const app = await this.deps.apps.authorize(principal.user.id, applicationId);
      // A scoped key pushes only where it may deploy: its application here, its environment per branch (check()).
      const refusal = await this.scopeRefusal(principal, applicationId, null);
      if (refusal) throw new PushRefused(403, refusal);
      return { principal, app };
    } catch (err) {
      if (err instanceof AppError && err.kind === 'FORBIDDEN')
        throw new PushRefused(403, `${principal.user.username} is not a member of the organization that owns this application`);
      if (err instanceof AppError && err.kind === 'NOT_FOUND') throw new PushRefused(404, 'No such application');
      throw err;
    }
  }

  private async rules(applicationId: string) {
    const row = await this.ctx.db
      .selectFrom('git_remotes')
      .select('allow_force_push')
      .where('application_id', '=', applicationId)
      .executeTakeFirst();
    return { allowForcePush: row?.allow_force_push ?? false, maxInputBytes: this.ctx.config.GIT_PUSH_MAX_BYTES };
  }

  /** `GET .../info/refs?service=git-receive-pack`: the refs advertisement. */
  async advertise(authorization: string | undefined, repository: string, service: string | undefined) {
    const { app, principal } = await this.authorize(authorization, repository);
    if (service !== 'git-receive-pack') throw new PushRefused(403, 'This remote takes pushes only (git push)');
    return this.refsAdvertisement(principal, app);
  }

  /** git's refs advertisement of the application's repository (smart HTTP's: a `# service=` packet and a flush first). */
  private async refsAdvertisement(principal: Principal, app: { id: string }) {
    await preparePushRepository(this.ctx.config.dataDir, app.id, await this.rules(app.id));
    let status = 200;
    let contentType = 'application/x-git-receive-pack-advertisement';
    const chunks: Buffer[] = [];
    const code = await runHttpBackend({
      dataDir: this.ctx.config.dataDir,
      pathInfo: `/${app.id}.git/info/refs`,
      method: 'GET',
      query: 'service=git-receive-pack',
      remoteUser: principal.user.username,
      timeoutMs: 60_000,
      onHeaders: (s, headers) => {
        status = s;
        contentType = headers['content-type'] ?? contentType;
      },
      onBody: (chunk) => chunks.push(chunk),
    });
    if (code !== 0 || status !== 200) throw new Error(`git http-backend answered ${status} (exit ${code}) to the refs advertisement`);
    return { contentType, body: Buffer.concat(chunks) };
  }

  /**
   * `POST .../git-receive-pack`: spools the request (bounded), checks every ref update,
   * stores the objects through git, then deploys each accepted branch while the client waits.
   */
  async receive(
    authorization: string | undefined,
    repository: string,
    request: { body: Readable; gzip: boolean },
    open: () => PushResponse,
  ): Promise<void> {
    const { app, principal } = await this.authorize(authorization, repository);
    await this.receiving(app.id, async (bound) => {
      const spool = await this.spoolFile();
      try {
        const spooled = await spoolBody(request.body, request.gzip, spool, bound);
        await this.receiveSpooled(principal, app, spool, spooled, open);
      } finally {
        await rm(spool, { force: true });
      }
    });
  }

  /**
   * One incoming push per application at a time (in this process; the next waits, its body unread,
   * and past a few waiting one is refused), spooled no further than the organization's room left
   * allows: a push past it keeps only its commands, and each of its ref updates is answered `ng`
   * with the quota's reason (git shows it), its pack read and dropped.
   */
  private async receiving(applicationId: string, receive: (bound: SpoolBound) => Promise<void>) {
    const slot = this.incoming.get(applicationId) ?? { tail: Promise.resolve(), pushes: 0 };
    if (slot.pushes > MAX_WAITING_PUSHES)
      throw new PushRefused(409, 'Other pushes to this application are being received: push again once they have ended');
    slot.pushes++;
    this.incoming.set(applicationId, slot);
    const previous = slot.tail;
    let release = () => {};
    slot.tail = new Promise<void>((resolve) => (release = resolve));
    try {
      await previous;
      const max = this.ctx.config.GIT_PUSH_MAX_BYTES;
      const left = await this.deps.roomLeft(applicationId);
      const quota = left !== null && left < max ? await this.roomRefusal(applicationId, left) : null;
      const tooLarge = `The push is larger than this server takes (${max} bytes, GIT_PUSH_MAX_BYTES)`;
      await receive({ bytes: quota ? left! : max, over: quota ?? tooLarge, refuses: quota !== null, max, tooLarge });
    } finally {
      if (--slot.pushes === 0) this.incoming.delete(applicationId);
      release();
    }
  }

  /**
   * `git push ssh://...`: git's receive-pack conversation on one SSH channel, for a caller known
   * by a registered SSH key. The refs go out first; the client's commands and pack are spooled
   * (bounded) and then take the path of an HTTP push: the same checks, serialisation and deploys.
   */
  async receiveOverSsh(principal: Principal, applicationId: string, channel: { input: Readable; out: PushResponse }) {
    const { app } = await this.authorizePrincipal(principal, applicationId);
    await this.receiving(app.id, async (bound) => {
      const advertisement = (await this.refsAdvertisement(principal, app)).body;
      channel.out.write(withoutServiceHeader(advertisement));
      const spool = await this.spoolFile();
      try {
        const spooled = await spoolSshRequest(channel.input, spool, bound);
        await this.receiveSpooled(principal, app, spool, spooled, () => channel.out);
      } finally {
        await rm(spool, { force: true });
      }
    });
  }

  private async spoolFile() {
    const spoolDir = join(pushRepositoriesRoot(this.ctx.config.dataDir), '.incoming');
    await mkdir(spoolDir, { recursive: true, mode: 0o700 });
    return join(spoolDir, randomUUID());
  }

  /** Checks every ref update of a spooled receive-pack request, stores the objects through git, then deploys each accepted branch while the client waits. */
  private async receiveSpooled(
    principal: Principal,
    app: { id: string; project_id: string; auto_deploy_branch: string | null },
    spool: string,
    { bytes, overQuota }: Spooled,
    open: () => PushResponse,
  ) {
    const commands = parsePushCommands(await readHead(spool, MAX_COMMAND_BYTES));
    if (!commands) throw new PushRefused(400, 'The push request could not be read (too many ref updates, or not git)');
    const sideband = commands.capabilities.has('side-band-64k') || commands.capabilities.has('side-band');
    const out = open();
    // git's probe before a large push (a bare flush) checks the credentials only: nothing to store.
    if (commands.updates.length === 0) return out.end();
    const progress = (text: string) => {
      if (sideband) out.write(bandPkt(2, `${text}\n`));
    };
    const report = (inner: Buffer) => {
      if (!sideband) return out.write(inner);
      for (let at = 0; at < inner.length; at += 65000) out.write(bandPkt(1, inner.subarray(at, at + 65000)));
    };
    try {
      const targets = new Map<string, Target[]>();
      const refused = new Map<string, string>();
      // Every push that stores objects needs room (a branch no environment deploys too), judged once.
      const room = commands.updates.some((u) => !ZERO_SHA.test(u.newSha)) ? (overQuota ?? (await this.roomRefusal(app.id))) : null;
      for (const update of commands.updates) {
        const reason = room && !ZERO_SHA.test(update.newSha) ? room : await this.check(principal, app, update, targets);
        if (reason) refused.set(update.ref, reason);
      }
      if (refused.size > 0) {
        // Nothing is stored when any update is refused: each says why (or that another one was).
        for (const [ref, reason] of refused) progress(`${shortRef(ref)}: ${reason}`);
        report(
          Buffer.concat([
            pkt('unpack ok\n'),
            ...commands.updates.map((u) =>
              pkt(`ng ${u.ref} ${oneLine(refused.get(u.ref) ?? 'not stored: another ref of this push was refused')}\n`),
            ),
            FLUSH,
          ]),
        );
        return;
      }
      await this.serialised(app.id, progress, async () => {
        // Any failure past here is the platform's: the client hears it on the error band, the log has the rest.
        await preparePushRepository(this.ctx.config.dataDir, app.id, await this.rules(app.id));
        const status = await this.store(app.id, principal.user.username, spool, bytes, sideband, out);
        if (status === null) return;
        await this.deploy(app.id, commands.updates, status, targets, progress, () => out.closed());
        report(statusText(status));
      });
    } finally {
      if (sideband) out.write(FLUSH);
      out.end();
    }
  }

  /** Why one ref update may not be stored (null: it may), recording where an accepted branch deploys. */
  private async check(
    principal: Principal,
    app: { id: string; project_id: string; auto_deploy_branch: string | null },
    update: RefUpdate,
    targets: Map<string, Target[]>,
  ): Promise<string | null> {
    if (!update.ref.startsWith('refs/heads/')) return 'only branches can be pushed to this remote';
    const branch = update.ref.slice('refs/heads/'.length);
    const found = await this.environmentsOf(app, branch);
    // A deletion (allowed only with force pushes) deploys nothing, but takes away the source an
    // environment deploys from: it needs the rights a deploy there needs (a protected one's admin).
    const deletion = ZERO_SHA.test(update.newSha);
    if (!deletion) targets.set(update.ref, found);
    const userId = principal.user.id;
    for (const target of found) {
      const refusal = await this.scopeRefusal(principal, app.id, target.environmentId);
      if (refusal) return refusal;
      try {
        await requireDeployAccess(this.ctx.db, userId, target.environmentId);
        if (!deletion) await requireJobRoom(this.ctx, app.id);
      } catch (err) {
        if (err instanceof AppError && err.status < 500) return err.message;
        throw err;
      }
    }
    return null;
  }

  /** Why the application's organization has no room for what a push stores (its disk quota), or null. */
  private async roomRefusal(applicationId: string, left?: number): Promise<string | null> {
    try {
      await this.deps.requireBuildRoom(applicationId);
      // Room, but less than a push may bring: what is past it is refused as over the quota.
      return left === undefined ? null : `The push is larger than the room left in the organization's disk quota (${left} bytes)`;
    } catch (err) {
      if (err instanceof AppError && err.status < 500) return err.message;
      throw err;
    }
  }

  /**
   * Why a scoped API key may not deploy this application (to this environment; null: at all), or
   * null when it may: the same check every /v1 route makes (platform/access/key-scope.ts).
   */
  private async scopeRefusal(principal: Principal, applicationId: string, environmentId: string | null) {
    // Deploying to an environment: the caller's role too (a viewer's push deploys nothing), as the deploy route checks it.
    if (environmentId) {
      const refusal = await checkRouteAccess(this.ctx.db, principal, {
        method: 'POST',
        url: '/v1/applications/:application_id/deploy',
        params: { application_id: applicationId },
        query: {},
        body: { environment: environmentId },
      });
      return refusal?.message ?? null;
    }
    if (!principal.scope) return null;
    const refusal = await checkScope(this.ctx.db, principal.user.id, principal.scope, {
      // Without an environment the question is "may it deploy here at all" (a read's latitude on levels).
      method: environmentId ? 'POST' : 'GET',
      need: { anyOf: ['deploy'] },
      params: { application_id: applicationId },
      query: {},
      body: environmentId ? { environment: environmentId } : {},
      credentialId: principal.credentialId,
    });
    return refusal?.reason ?? null;
  }

  /** The environments a branch deploys to: production for the application's branch (default `main`), and any with that auto_deploy_branch. */
  private async environmentsOf(app: { id: string; project_id: string; auto_deploy_branch: string | null }, branch: string) {
    const rows = await this.ctx.db
      .selectFrom('environments')
      .select(['id', 'slug', 'auto_deploy_branch'])
      .where('project_id', '=', app.project_id)
      .where('deleted_at', 'is', null)
      .execute();
    const production = (app.auto_deploy_branch ?? 'main') === branch ? rows.filter((e) => e.slug === 'production') : [];
    const others = rows.filter((e) => e.slug !== 'production' && e.auto_deploy_branch === branch);
    return [...production, ...others].map((e) => ({ environmentId: e.id, slug: e.slug }));
  }

  /** One push of an application at a time (across processes): a session advisory lock held on its own connection. */
  private async serialised(applicationId: string, progress: (t: string) => void, work: () => Promise<void>) {
    await this.ctx.db.connection().execute(async (conn) => {
      const key = sql`hashtext(${`slipway.git-push.${applicationId}`})`;
      const got = await sql<{ ok: boolean }>`SELECT pg_try_advisory_lock(3401, ${key}) AS ok`.execute(conn);
      if (!got.rows[0]?.ok) {
        progress('Waiting for another push to this application to finish...');
        await sql`SELECT pg_advisory_lock(3401, ${key})`.execute(conn);
      }
      try {
        await work();
      } finally {
        await sql`SELECT pg_advisory_unlock(3401, ${key})`.execute(conn);
      }
    });
  }

  /**
   * Runs git's receive-pack on the spooled request: its progress goes straight to the client,
   * its report (band 1) is kept to be told after the deploys. Returns the report's lines, or
   * null when git failed (what it said already went out).
   */
  private async store(applicationId: string, user: string, spool: string, bytes: number, sideband: boolean, out: PushResponse) {
    const reader = new PktReader();
    const reportBytes: Buffer[] = [];
    let ended = false;
    let status = 200;
    const code = await runHttpBackend({
      dataDir: this.ctx.config.dataDir,
      pathInfo: `/${applicationId}.git/git-receive-pack`,
      method: 'POST',
      query: '',
      contentType: 'application/x-git-receive-pack-request',
      bodyFile: spool,
      bodyBytes: bytes,
      remoteUser: user,
      timeoutMs: this.ctx.config.GIT_PUSH_TIMEOUT_SECONDS * 1000,
      onHeaders: (s) => {
        status = s;
      },
      onBody: (chunk) => {
        if (!sideband) return reportBytes.push(chunk);
        for (const packet of reader.push(chunk)) {
          if (ended) continue;
          if (packet.kind === 'flush') ended = true;
          else if (packet.kind === 'data' && packet.payload[0] === 1) reportBytes.push(packet.payload.subarray(1));
          else out.write(packet.raw); // progress and fatal errors reach the client as git wrote them
        }
      },
    });
    if (code !== 0 || status !== 200) {
      if (sideband) out.write(bandPkt(3, `storing the push failed (git exit ${code ?? 'killed: timeout'})\n`));
      return null;
    }
    return parseStatus(Buffer.concat(reportBytes));
  }

  /** Deploys each stored branch update; a failed one is moved back and reported `ng`. */
  private async deploy(
    applicationId: string,
    updates: RefUpdate[],
    status: ReportStatus,
    targets: Map<string, Target[]>,
    progress: (t: string) => void,
    gone: () => boolean,
  ) {
    const dir = join(pushRepositoriesRoot(this.ctx.config.dataDir), `${applicationId}.git`);
    for (const update of updates) {
      if (!status.refs.get(update.ref)?.ok || ZERO_SHA.test(update.newSha)) continue;
      const found = targets.get(update.ref) ?? [];
      const branch = shortRef(update.ref);
      if (found.length === 0) {
        progress(
          `${branch} deploys to no environment: stored only (set auto_deploy_branch of the application or an environment to deploy it)`,
        );
        continue;
      }
      for (const target of found) {
        progress(`Deploying ${branch} (${update.newSha.slice(0, 12)}) to ${target.slug}`);
        let failure: string | null = null;
        try {
          const started = await this.deps.startChain(applicationId, update.newSha, target.environmentId);
          const deadline = Date.now() + this.ctx.config.GIT_PUSH_FOLLOW_SECONDS * 1000;
          const result = await followChain(this.ctx.db, { imageId: started.image_id, jobId: started.job_id }, progress, deadline, gone);
          if (result.ok === true) progress(`Deployed to ${target.slug}${result.url ? `: ${result.url}` : ''}`);
          else if (result.ok === null) progress(`Still deploying; follow it with: ${result.seeMore} --follow`);
          else {
            progress(`Deploy of ${branch} to ${target.slug} failed: ${result.detail}`);
            progress(`See more with: ${result.seeMore}`);
            failure = result.detail;
          }
        } catch (err) {
          if (!(err instanceof AppError) || err.status >= 500) throw err;
          progress(`Deploy of ${branch} to ${target.slug} refused: ${err.message}`);
          failure = err.message;
        }
        if (failure) {
          // The branch stays where it was, so pushing the same commit again deploys it again.
          await restoreRef(dir, update.ref, update.oldSha, update.newSha);
          status.refs.set(update.ref, { ok: false, reason: failure });
          break;
        }
      }
    }
  }

  /** The remote of an application for the API: its path on this server and its push rules. */
  async remote(userId: string, applicationId: string) {
    await this.deps.apps.authorize(userId, applicationId);
    const rules = await this.rules(applicationId);
    return { path: `/git/${applicationId}.git`, allow_force_push: rules.allowForcePush };
  }

  async updateRemote(userId: string, applicationId: string, allowForcePush: boolean) {
    await this.deps.apps.authorize(userId, applicationId);
    await requireProtectedEnvironmentAdmin(this.ctx.db, userId, { applicationId }, 'whether pushes may rewrite its branches');
    await this.ctx.db
      .insertInto('git_remotes')
      .values({ application_id: applicationId, allow_force_push: allowForcePush })
      .onConflict((oc) => oc.column('application_id').doUpdateSet({ allow_force_push: allowForcePush, updated_at: sql`now()` }))
      .execute();
    return this.remote(userId, applicationId);
  }
}

interface ReportStatus {
  unpack: string;
  refs: Map<string, { ok: boolean; reason?: string }>;
}

/** receive-pack's report (`unpack ok`, `ok <ref>`, `ng <ref> <reason>`; v2's `option` lines are dropped). */
function parseStatus(inner: Buffer): ReportStatus {
  const status: ReportStatus = { unpack: 'unpack ok', refs: new Map() };
  for (const packet of new PktReader().push(inner)) {
    if (packet.kind !== 'data') continue;
    const line = packet.payload.toString('utf8').replace(/\n$/, '');
    if (line.startsWith('unpack ')) status.unpack = line;
    else if (line.startsWith('ok ')) status.refs.set(line.slice(3), { ok: true });
    else if (line.startsWith('ng ')) {
      const [ref, ...reason] = line.slice(3).split(' ');
      status.refs.set(ref!, { ok: false, reason: reason.join(' ') });
    }
  }
  return status;
}

function statusText(status: ReportStatus): Buffer {
  return Buffer.concat([
    pkt(`${status.unpack}\n`),
    ...[...status.refs].map(([ref, r]) => pkt(r.ok ? `ok ${ref}\n` : `ng ${ref} ${oneLine(r.reason ?? 'rejected')}\n`)),
    FLUSH,
  ]);
}

const oneLine = (text: string) => text.replace(/\s+/g, ' ').slice(0, 400);
const shortRef = (ref: string) => ref.replace(/^refs\/heads\//, '');

/** The password of an HTTP Basic authorization (git sends the API key there); an X-API-Key-less client has no other way. */
function basicPassword(authorization: string | undefined): string | null {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(authorization ?? '');
  if (!match) return null;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  const password = colon >= 0 ? decoded.slice(colon + 1) : '';
  return password || null;
}

/** Writes the request body (gunzipped when git compressed it) to `file`; refuses past `max` bytes. */
/** Pushes to one application that may wait behind the one being received (git's probe and its push, a retry). */
const MAX_WAITING_PUSHES = 3;

/** How much of a push may be spooled, and what is said past it (a quota's bound refuses in git's protocol, not HTTP). */
interface SpoolBound {
  bytes: number;
  over: string;
  refuses: boolean;
  /** GIT_PUSH_MAX_BYTES, and what is said past it. */
  max: number;
  tooLarge: string;
}

/** What was spooled; `overQuota` when the push went past the quota's room (only its commands were kept). */
interface Spooled {
  bytes: number;
  overQuota: string | null;
}

/** Past a quota's bound: the commands are kept (they are first, and small), the rest read and dropped. */
function boundedChunk(chunk: Buffer, before: number, bound: SpoolBound): Buffer | PushRefused {
  if (before + chunk.length <= bound.bytes) return chunk;
  // Read and dropped past the quota's bound, but never more than any push may bring.
  if (!bound.refuses || before + chunk.length > bound.max) return new PushRefused(413, bound.refuses ? bound.tooLarge : bound.over);
  return chunk.subarray(0, Math.max(0, MAX_COMMAND_BYTES - before));
}

async function spoolBody(body: Readable, gzip: boolean, file: string, bound: SpoolBound): Promise<Spooled> {
  let total = 0;
  let overQuota: string | null = null;
  const limit = new Transform({
    transform(chunk: Buffer, _enc, done) {
      const kept = boundedChunk(chunk, total, bound);
      total += chunk.length;
      if (kept instanceof PushRefused) return done(kept);
      if (kept !== chunk) overQuota = bound.over;
      done(null, kept);
    },
  });
  const sink = createWriteStream(file, { mode: 0o600 });
  try {
    if (gzip) await pipeline(body, createGunzip(), limit, sink);
    else await pipeline(body, limit, sink);
  } catch (err) {
    if (err instanceof PushRefused) throw err;
    throw new PushRefused(400, `The push request could not be read: ${(err as Error).message}`);
  }
  return { bytes: overQuota ? 0 : total, overQuota };
}

/**
 * What a git client sends on an SSH channel after the refs: its commands up to a flush, then its
 * pack until it closes its side (none when every update deletes a branch, or there are none).
 * Written to `file`; refused past `max` bytes.
 */
async function spoolSshRequest(input: Readable, file: string, bound: SpoolBound): Promise<Spooled> {
  const sink = createWriteStream(file, { mode: 0o600 });
  let total = 0;
  let overQuota: string | null = null;
  let head: Buffer | null = Buffer.alloc(0);
  // Listeners, not an async iterator: leaving one early would destroy the channel the report goes back on.
  const read = new Promise<void>((resolve, reject) => {
    const stop = (err?: Error) => {
      input.off('data', onData).off('end', onEnd).off('close', onEnd).off('error', stop);
      if (err) reject(err);
      else resolve();
    };
    const onEnd = () => stop();
    const onData = (chunk: Buffer) => {
      const kept = boundedChunk(chunk, total, bound);
      total += chunk.length;
      if (kept instanceof PushRefused) return stop(kept);
      if (kept !== chunk) overQuota = bound.over;
      if (!sink.write(kept)) {
        input.pause();
        sink.once('drain', () => input.resume());
      }
      if (!head) return;
      head = Buffer.concat([head, chunk]);
      const commands = parsePushCommands(head.subarray(0, MAX_COMMAND_BYTES));
      if (commands) {
        head = null;
        // No pack follows when nothing is added: the client waits for the report with its side open.
        if (commands.updates.every((u) => ZERO_SHA.test(u.newSha))) stop();
      } else if (head.length > MAX_COMMAND_BYTES)
        stop(new PushRefused(400, 'The push could not be read (too many ref updates, or not git)'));
    };
    input.on('data', onData).once('end', onEnd).once('close', onEnd).once('error', stop);
    input.resume(); // the gateway holds the channel paused until this reader listens
  });
  try {
    await read;
  } finally {
    await new Promise<void>((resolve, reject) => sink.end((err?: Error | null) => (err ? reject(err) : resolve())));
  }
  return { bytes: overQuota ? 0 : total, overQuota };
}

/** Smart HTTP's refs advertisement without its `# service=...` packet and flush: what git sends first over SSH. */
function withoutServiceHeader(advertisement: Buffer): Buffer {
  const first = advertisement.toString('latin1', 4, 14);
  if (first !== '# service=') return advertisement;
  const size = parseInt(advertisement.toString('latin1', 0, 4), 16);
  const rest = advertisement.subarray(size);
  return rest.toString('latin1', 0, 4) === '0000' ? rest.subarray(4) : rest;
}

async function readHead(file: string, bytes: number): Promise<Buffer> {
  const handle = await open(file, 'r');
  try {
    const buffer = Buffer.alloc(bytes);
    const { bytesRead } = await handle.read(buffer, 0, bytes, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}
