import { AsyncLocalStorage } from 'node:async_hooks';
import type { CredentialKind } from '../db/schema.js';

/** Who made a change: the authenticated user and the credential they used. */
export interface AuditActor {
  userId: string | null;
  username: string | null;
  credentialKind: CredentialKind;
  credentialId: string | null;
}

/** What a service knows better than the route: which resource, and its non-secret fields before and after. */
export interface AuditedChange {
  organizationId?: string | null;
  resourceType?: string;
  resourceId?: string | null;
  before?: Record<string, unknown> | null;
  after?: Record<string, unknown> | null;
}

/** The request facts an audit row is made of (read when the row is written). */
export interface AuditedRequest {
  requestId: string;
  method: string;
  /** The route pattern, e.g. `/v1/organizations/:org_slug/webhooks`. */
  route: string;
  params: Record<string, string>;
  /** The client's address: X-Forwarded-For read through the trusted proxies only (TRUST_PROXY), else the peer's. */
  clientAddress: string | null;
  /** The socket's peer: the proxy in front, or the client itself. */
  peerAddress: string | null;
  body: unknown;
}

/**
 * Enabled only while a changing request is in flight: on Node 20 an enabled AsyncLocalStorage puts a hook
 * on every promise the process makes, reads included (issue 35), and `disable()` takes it off again once
 * no storage is enabled. Reads never need the store, and a closed audit records nothing, so a request's
 * later work finding no store (undefined) behaves as finding its closed audit. A close that never comes
 * (a request dropped without an answer) only keeps the hook on.
 */
const storage = new AsyncLocalStorage<RequestAudit>();
let inFlight = 0;

/**
 * One changing API request, for the length of its handler: the auditing database driver
 * (auditing-dialect.ts) writes its audit row in the transaction of its first write.
 */
export class RequestAudit {
  /** Writes count only once the request is authenticated and valid (the handler runs). */
  armed = false;
  /** After the response: later writes (background work the request started) are not its change. */
  closed = false;
  /** Counted among the changing requests in flight (runWithAudit), until closed. */
  private holding = false;
  /** A transaction holds (or committed) this request's audit row. */
  claimed = false;
  rowId: number | null = null;
  /** A refused request (403): its row records the attempt, not a change. */
  denied = false;
  readonly change: AuditedChange = {};
  private actorOverride: AuditActor | null = null;

  constructor(
    readonly request: AuditedRequest,
    private readonly principal: () => AuditActor,
  ) {}

  get actor(): AuditActor {
    return this.actorOverride ?? this.principal();
  }

  /** Whether a write now belongs to this request and still needs its row. */
  get wantsRow(): boolean {
    return this.armed && !this.closed && !this.claimed;
  }

  setActor(actor: AuditActor) {
    this.actorOverride = actor;
  }

  /** The request is answered: nothing it writes from now on is its change. */
  close() {
    this.closed = true;
    if (!this.holding) return;
    this.holding = false;
    if (--inFlight === 0) storage.disable();
  }

  /** @internal runWithAudit's count of changing requests in flight. */
  hold() {
    if (this.holding) return;
    this.holding = true;
    inFlight++;
  }
}

/** Runs `fn` (the rest of the request) with `audit` as the current request's audit, until `audit.close()`. */
export function runWithAudit(audit: RequestAudit, fn: () => void) {
  audit.hold();
  storage.run(audit, fn);
}

/** Changing requests not closed yet (the storage is enabled while there is one): for tests and diagnostics. */
export function changingRequestsInFlight(): number {
  return inFlight;
}

export function currentAudit(): RequestAudit | undefined {
  return storage.getStore();
}

/**
 * Services describe their change before they write it (the row is written with the first
 * write): the resource, and before/after of NON-secret fields only.
 */
export function describeAuditedChange(change: AuditedChange) {
  const audit = storage.getStore();
  if (audit) Object.assign(audit.change, change);
}

/** For requests whose actor is only known in the handler (a login: the user whose password matched). */
export function setAuditActor(actor: AuditActor) {
  storage.getStore()?.setActor(actor);
}
