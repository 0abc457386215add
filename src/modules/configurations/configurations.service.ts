import { sql } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import type { SecretBox } from '../../platform/crypto/secret-box.js';
import type { Db } from '../../platform/db/database.js';
import type { ConfigScope } from '../../platform/db/schema.js';
import { AppError, conflict, forbidden, isUniqueViolation, notFound } from '../../platform/errors.js';
import { iso } from '../../platform/http/schemas.js';
import { resealAll } from '../../platform/crypto/rotation.js';
import { attachedAddonVariables } from '../../platform/addons/attached.js';
import { executeAudited } from '../../platform/audit/audited-statement.js';
import { protectedRefusal } from '../../platform/access/environment-protection.js';
import { parseDotenv } from './dotenv.js';
import { scopeOrganizationId } from './scope-chain.js';
import type { ConfigurationsRepository, ScopeRef } from './configurations.repository.js';
import { CONFIG_NAME_PATTERN, MAX_VALUE_BYTES, SECRET_MASK } from './configurations.schemas.js';

type ConfigRow = Awaited<ReturnType<ConfigurationsRepository['list']>>[number];

const toVariable = (row: ConfigRow) => ({
  id: row.id,
  name: row.name,
  value: row.secret ? SECRET_MASK : (row.value ?? ''),
  secret: row.secret,
  buildtime: row.buildtime,
  previews: row.previews,
  created: iso(row.created_at),
  updated: iso(row.updated_at),
});

/** A variable after layering, with its plain value: for building and running only, never for responses. */
export interface ResolvedVariable {
  name: string;
  value: string;
  secret: boolean;
  buildtime: boolean;
  /** `addon`: an attached add-on's URL (src/platform/addons). */
  scope: ConfigScope | 'addon';
  scopeId: string;
}

const NAME = new RegExp(CONFIG_NAME_PATTERN);
const SECRET_FOR_FORKS_REFUSAL =
  'Only organization admins can give a secret to previews of pull requests from forks (secret with previews: true)';

type BulkInput = { variables?: Record<string, string>; raw?: string; secret?: boolean; buildtime?: boolean; previews?: boolean };
type BulkResult = { created: string[]; updated: string[]; skipped: string[]; errors: Array<{ name: string; message: string }> };

/** A bulk input's entries (the last of a name wins, as when a shell reads a dotenv file), the invalid ones reported. */
function bulkEntries(input: BulkInput): { result: BulkResult; valid: Array<{ name: string; value: string }> } {
  const result: BulkResult = { created: [], updated: [], skipped: [], errors: [] };
  const entries: Array<{ name: string; value: string }> = [];
  if (input.raw !== undefined) {
    const parsed = parseDotenv(input.raw);
    entries.push(...parsed.entries);
    result.errors.push(...parsed.errors);
  }
  for (const [name, value] of Object.entries(input.variables ?? {})) entries.push({ name, value });
  const byName = new Map(entries.map((e) => [e.name.toLowerCase(), e]));
  const valid: Array<{ name: string; value: string }> = [];
  for (const entry of byName.values()) {
    const problem = checkEntry(entry.name, entry.value);
    if (problem) result.errors.push({ name: entry.name, message: problem });
    else valid.push(entry);
  }
  return { result, valid };
}

const entryBytes = (e: { name: string; value: string }) => Buffer.byteLength(e.name) + Buffer.byteLength(e.value);

function checkEntry(name: string, value: string): string | null {
  if (!NAME.test(name) || name.length > 255)
    return 'invalid name: letters, digits and _ only, not starting with a digit, at most 255 characters';
  if (Buffer.byteLength(value, 'utf8') > MAX_VALUE_BYTES) return `value is longer than ${MAX_VALUE_BYTES} bytes`;
  return null;
}

/** Configuration variables at any scope; callers check access to the scope first. */
/** How much one scope may hold (CONFIG_MAX_VARIABLES_PER_SCOPE, CONFIG_MAX_BYTES_PER_SCOPE). */
export interface ScopeLimits {
  variables: number;
  bytes: number;
}
export const DEFAULT_SCOPE_LIMITS: ScopeLimits = { variables: 1000, bytes: 1024 * 1024 };

/**
 * Decides whether a caller may write to a scope beyond being a member: the protected-
 * environment rule, supplied by the composition root (the environments module owns it and
 * itself depends on this one).
 */
export type ScopeWriteGuard = (userId: string, scope: ScopeRef) => Promise<void>;

/** Whether the user is an admin of the organization (supplied by the composition root: organizations sit above this module). */
export type OrganizationAdminCheck = (userId: string, organizationId: string) => Promise<boolean>;

/** What a write makes of a variable (by id or name when it may exist), for the rule on secrets given to forks. */
export interface VariableIntent {
  id?: string;
  name?: string;
  secret?: boolean;
  previews?: boolean;
}

export class ConfigurationsService {
  constructor(
    private readonly db: Db,
    private readonly repo: ConfigurationsRepository,
    private readonly secrets: SecretBox,
    private readonly limits: ScopeLimits = DEFAULT_SCOPE_LIMITS,
    private readonly writeGuard: ScopeWriteGuard | null = null,
    private readonly isOrganizationAdmin: OrganizationAdminCheck | null = null,
  ) {}

  /** The URLs the add-ons attached to an application environment give it (plain: for releases only). */
  attachedAddons(applicationId: string, environmentId: string) {
    return attachedAddonVariables(this.db, this.secrets, applicationId, environmentId);
  }

  /** Every variable of the given scopes (values of secrets stay sealed), for views that show layering. */
  variablesInScopes(scopes: ScopeRef[]) {
    return this.repo.listMany(scopes);
  }

  /**
   * Any write to a scope a protected environment inherits (its own, its project's, team's
   * or organization's, or an application's) needs an organization admin: the next release
   * ships the value. The HTTP routes call this before every create, bulk, change or delete.
   */
  async authorizeWrite(userId: string, scope: ScopeRef, intents: VariableIntent[] = []): Promise<void> {
    if (!this.writeGuard || !this.isOrganizationAdmin)
      throw new Error('ConfigurationsService serves HTTP writes only with its guards (see src/services.ts)');
    await this.writeGuard(userId, scope);
    // A secret marked for previews goes to anyone who can open a pull request: as copy_secrets, an admin's choice.
    if (
      (await this.sharesSecretWithForks(scope, intents)) &&
      !(await this.isOrganizationAdmin(userId, await scopeOrganizationId(this.db, scope)))
    ) {
      throw forbidden(SECRET_FOR_FORKS_REFUSAL);
    }
  }

  /** Whether a write leaves a variable both secret and marked for previews that was not both before. */
  private async sharesSecretWithForks(scope: ScopeRef, intents: VariableIntent[]): Promise<boolean> {
    for (const intent of intents) {
      if (intent.secret === false || intent.previews === false) continue;
      const existing = intent.id
        ? await this.repo.find(scope, intent.id)
        : intent.name
          ? await this.repo.findByName(scope, intent.name)
          : undefined;
      const secret = intent.secret ?? existing?.secret ?? false;
      const previews = intent.previews ?? existing?.previews ?? false;
      if (secret && previews && !(existing?.secret && existing.previews)) return true;
    }
    return false;
  }

  /**
   * Refuses (422, nothing written) a write that would leave the scope over its limits: every
   * release copies the whole scope, so an unbounded one makes every release and start slow.
   */
  private async requireRoom(scope: ScopeRef, incoming: Array<{ name: string; value: string }>) {
    const sizes = new Map((await this.repo.sizesInScope(scope)).map((r) => [r.name, r.bytes]));
    for (const e of incoming) sizes.set(e.name.toLowerCase(), entryBytes(e));
    this.refuseOverLimits(
      scope,
      sizes.size,
      [...sizes.values()].reduce((a, b) => a + b, 0),
    );
  }

  /** Refuses (422) a scope that would hold more than its limits after a write. */
  private refuseOverLimits(scope: ScopeRef, variables: number, bytes: number) {
    if (variables > this.limits.variables) {
      throw new AppError(
        'VALIDATION',
        `variables: a ${scope.scope} holds at most ${this.limits.variables} variables (this would make ${variables})`,
        [{ field: 'variables', message: `at most ${this.limits.variables} per scope` }],
      );
    }
    if (bytes > this.limits.bytes) {
      throw new AppError(
        'VALIDATION',
        `variables: a ${scope.scope} holds at most ${this.limits.bytes} bytes of names and values (this would make ${bytes})`,
        [{ field: 'variables', message: `at most ${this.limits.bytes} bytes per scope` }],
      );
    }
  }

  private stored(value: string, secret: boolean) {
    return secret ? { value: null, value_sealed: this.secrets.seal(value) } : { value, value_sealed: null };
  }

  async list(scope: ScopeRef) {
    return (await this.repo.list(scope)).map(toVariable);
  }

  /**
   * An application's variables (secrets masked) as the answer's JSON text, for a member of its organization:
   * PostgreSQL writes it in the read that checks the membership (issue 35: no row parsing, dates or
   * serializing in node; a test holds each item equal to `get`'s). 404 without the application, 403 for a
   * caller who is not a member, as the routes' authorize answers.
   */
  async listJsonForApplication(userId: string, applicationId: string): Promise<string> {
    const list = await this.repo.answerOfApplicationFor(applicationId, userId, SECRET_MASK);
    if (list === undefined) throw notFound('Application');
    if (list === 'forbidden') throw forbidden();
    return list;
  }

  async get(scope: ScopeRef, id: string) {
    const row = await this.repo.find(scope, id);
    if (!row) throw notFound('Configuration variable');
    return toVariable(row);
  }

  async create(scope: ScopeRef, input: { name: string; value: string; secret?: boolean; buildtime?: boolean; previews?: boolean }) {
    const secret = input.secret ?? false;
    await this.requireRoom(scope, [{ name: input.name, value: input.value }]);
    try {
      const row = await this.repo.insert({
        id: uuidv7(),
        scope: scope.scope,
        scope_id: scope.scopeId,
        name: input.name,
        secret,
        buildtime: input.buildtime ?? false,
        previews: input.previews ?? false,
        ...this.stored(input.value, secret),
      });
      return toVariable(row);
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict(`A variable named '${input.name}' already exists here`);
      throw err;
    }
  }

  async update(scope: ScopeRef, id: string, input: { value?: string; secret?: boolean; buildtime?: boolean; previews?: boolean }) {
    const current = await this.repo.find(scope, id);
    if (!current) throw notFound('Configuration variable');
    const secret = input.secret ?? current.secret;
    if (current.secret && !secret && input.value === undefined) {
      throw new AppError('VALIDATION', 'value: required when a secret stops being secret (its old value is never revealed)', [
        { field: 'value', message: 'required when a secret stops being secret' },
      ]);
    }
    if (input.value !== undefined) await this.requireRoom(scope, [{ name: current.name, value: input.value }]);
    const value = input.value ?? (current.secret ? this.secrets.open(current.value_sealed!) : current.value!);
    const row = await this.repo.update(scope, id, {
      secret,
      buildtime: input.buildtime ?? current.buildtime,
      previews: input.previews ?? current.previews,
      ...this.stored(value, secret),
    });
    if (!row) throw notFound('Configuration variable');
    return toVariable(row);
  }

  async delete(scope: ScopeRef, id: string) {
    if (!(await this.repo.delete(scope, id))) throw notFound('Configuration variable');
    return { ok: true };
  }

  /**
   * Sets many variables at once from `variables` and/or dotenv `raw`. Existing names are
   * updated unless secret (skipped); invalid entries are reported and the rest still apply.
   */
  async bulk(scope: ScopeRef, input: BulkInput) {
    const { result, valid } = bulkEntries(input);
    await this.requireRoom(scope, valid);
    return this.writeBulk(scope, valid, input, result);
  }

  /**
   * `bulk` on an application's own variables for a caller (the HTTP route), with every check
   * `authorize` + `authorizeWrite` + the scope's limits make read in one statement (issue 35:
   * four round trips before the write), answered in the same order: 404, 403 (no member), 403
   * (a protected environment inherits it and the caller is no admin), 403 (a secret for forks'
   * previews from a non-admin), 422 (over the limits).
   */
  async bulkForApplication(userId: string, applicationId: string, input: BulkInput) {
    const { result, valid } = bulkEntries(input);
    const checks = await this.repo.applicationWriteChecks(
      applicationId,
      userId,
      valid.map((e) => e.name.toLowerCase()),
    );
    if (!checks) throw notFound('Application');
    if (!checks.is_member) throw forbidden();
    if (checks.locked && !checks.org_admin) throw protectedRefusal(checks.locked, 'the configuration it inherits (application scope)');
    // The rule of sharesSecretWithForks for a bulk's one set of flags (its entries name no existing variable).
    if (input.secret === true && input.previews === true && !checks.org_admin) throw forbidden(SECRET_FOR_FORKS_REFUSAL);
    const scope: ScopeRef = { scope: 'application', scopeId: checks.id };
    this.refuseOverLimits(scope, checks.variables + valid.length, checks.bytes + valid.reduce((sum, e) => sum + entryBytes(e), 0));
    return this.writeBulk(scope, valid, input, result);
  }

  private async writeBulk(scope: ScopeRef, valid: Array<{ name: string; value: string }>, input: BulkInput, result: BulkResult) {
    if (valid.length === 0) return result;
    const secret = input.secret ?? false;
    const buildtime = input.buildtime ?? false;
    const previews = input.previews ?? false;
    // One statement for every name (issue 35: 100 variables were 100 round trips). Rows are
    // written in name order, so concurrent bulk calls lock them in the same order and never deadlock.
    const ordered = [...valid].sort((a, b) => (a.name.toLowerCase() < b.name.toLowerCase() ? -1 : 1));
    const stored = ordered.map((e) => this.stored(e.value, secret));
    const upsert = sql<{ name: string; inserted: boolean }>`
      insert into config_vars (id, scope, scope_id, name, value, value_sealed, secret, buildtime, previews)
      select v.id, ${scope.scope}, ${scope.scopeId}, v.name, v.value, v.value_sealed, ${secret}, ${buildtime}, ${previews}
      from unnest(${ordered.map(() => uuidv7())}::uuid[], ${ordered.map((e) => e.name)}::text[],
                  ${stored.map((s) => s.value)}::text[], ${stored.map((s) => s.value_sealed)}::text[])
           with ordinality as v(id, name, value, value_sealed, position)
      order by v.position
      on conflict (scope, scope_id, lower(name)) do update
        set value = excluded.value, value_sealed = excluded.value_sealed, secret = excluded.secret,
            buildtime = excluded.buildtime, previews = excluded.previews, updated_at = now()
        where not config_vars.secret
      returning lower(name) as name, (xmax = 0) as inserted`;
    // The request's audit row in the same statement (one round trip where there were four).
    const rows = await executeAudited(this.db, 'written', (audit) =>
      audit
        ? sql<{ name: string; inserted: boolean }>`with written as (${upsert}) ${audit.cte} select name, inserted ${audit.id} from written`
        : upsert,
    );
    const written = new Map(rows.map((r) => [r.name, r.inserted]));
    for (const { name } of valid) {
      const inserted = written.get(name.toLowerCase());
      if (inserted === undefined) result.skipped.push(name);
      else if (inserted) result.created.push(name);
      else result.updated.push(name);
    }
    return result;
  }

  /**
   * Layers the given scopes, highest first (organization … application): a lower scope's
   * variable overrides a higher one's of the same name (case-insensitively). With
   * `markedForPreviewsOnly` (a fork's preview) only variables marked `previews` take part.
   */
  async resolve(scopesHighToLow: ScopeRef[], options: { markedForPreviewsOnly?: boolean } = {}): Promise<ResolvedVariable[]> {
    const all = await this.repo.listMany(scopesHighToLow);
    const rows = options.markedForPreviewsOnly ? all.filter((row) => row.previews) : all;
    const rank = new Map(scopesHighToLow.map((s, i) => [`${s.scope}:${s.scopeId}`, i]));
    rows.sort((a, b) => rank.get(`${a.scope}:${a.scope_id}`)! - rank.get(`${b.scope}:${b.scope_id}`)!);
    const resolved = new Map<string, ResolvedVariable>();
    for (const row of rows) {
      resolved.set(row.name.toLowerCase(), {
        name: row.name,
        value: row.secret ? this.secrets.open(row.value_sealed!) : row.value!,
        secret: row.secret,
        buildtime: row.buildtime,
        scope: row.scope,
        scopeId: row.scope_id,
      });
    }
    return [...resolved.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Re-seals every secret still sealed with an older key (after rotating SECRET_KEY). */
  async resealAll(): Promise<number> {
    const [result] = await resealAll(this.db, this.secrets, [{ table: 'config_vars', column: 'value_sealed' }]);
    return result?.resealed ?? 0;
  }
}
