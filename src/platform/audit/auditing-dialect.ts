import {
  CompiledQuery,
  PostgresDialect,
  type DatabaseConnection,
  type Driver,
  type PostgresDialectConfig,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';
import { auditInsert } from './audit-row.js';
import { currentAudit, type RequestAudit } from './request-audit.js';

/** Writes that are bookkeeping, not a change someone made (failed-login counters, the log itself). */
const UNAUDITED_TABLES = new Set(['audit_log', 'login_failures', 'login_known_addresses']);

/** The table a write query changes, or null for a read (or a write we do not audit). */
export function writtenTable(query: CompiledQuery): string | null {
  const node = query.query;
  let table: string | undefined;
  switch (node.kind) {
    case 'InsertQueryNode':
      table = tableName(field(node, 'into'));
      break;
    case 'UpdateQueryNode':
      table = tableName(field(node, 'table'));
      break;
    case 'DeleteQueryNode':
      table = tableName((field(field(node, 'from'), 'froms') as unknown[] | undefined)?.[0]);
      break;
    case 'MergeQueryNode':
      table = tableName(field(node, 'into'));
      break;
    case 'RawNode':
      // A plain write, or a statement whose first CTE writes (`WITH x AS (INSERT INTO …`: one statement for a record and what goes with it).
      table = (/^\s*(?:insert\s+into|update|delete\s+from)\s+"?([a-z_][a-z0-9_]*)"?/i.exec(query.sql) ??
        /^\s*with\s+"?[a-z_][a-z0-9_]*"?\s+as\s+(?:(?:not\s+)?materialized\s+)?\(\s*(?:insert\s+into|update|delete\s+from)\s+"?([a-z_][a-z0-9_]*)"?/i.exec(
          query.sql,
        ))?.[1];
      break;
  }
  if (!table) return null;
  return UNAUDITED_TABLES.has(table.toLowerCase()) ? null : table;
}

function field(node: unknown, name: string): unknown {
  return node && typeof node === 'object' ? (node as Record<string, unknown>)[name] : undefined;
}

/** The name in a TableNode, or in the TableNode of an AliasNode (`update users as u`). */
function tableName(node: unknown): string | undefined {
  const table = field(node, 'kind') === 'AliasNode' ? field(node, 'node') : node;
  const name = field(field(field(table, 'table'), 'identifier'), 'name');
  return typeof name === 'string' ? name : undefined;
}

interface ConnectionState {
  inTransaction: boolean;
  /** The request whose audit row this transaction wrote (released again on rollback). */
  audited: RequestAudit | null;
}

/**
 * A connection that writes the current request's audit row (request-audit.ts) in the same
 * transaction as the request's first change: inside the caller's transaction when there is
 * one, else it wraps that single statement in one. A rolled-back transaction takes the row
 * with it, and the request's next write records it again.
 */
class AuditingConnection implements DatabaseConnection {
  readonly state: ConnectionState = { inTransaction: false, audited: null };
  constructor(readonly inner: DatabaseConnection) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const audit = currentAudit();
    if (!audit?.wantsRow || !writtenTable(query)) return this.inner.executeQuery<R>(query);
    audit.claimed = true;
    const own = !this.state.inTransaction;
    // Inside the caller's transaction a savepoint lets a write that changed nothing (or failed) take the row back.
    await this.run(own ? 'begin' : 'savepoint slipway_audit');
    let result: QueryResult<R>;
    try {
      await this.writeRow(audit);
      result = await this.inner.executeQuery<R>(query);
    } catch (err) {
      this.unclaim(audit);
      // The statement's own error is the one to report; a failed rollback leaves an aborted transaction the pool discards.
      await this.run(own ? 'rollback' : 'rollback to savepoint slipway_audit').catch(() => {});
      throw err;
    }
    // An UPDATE or DELETE that matched nothing changed nothing: no row for it (the request's next write records one).
    if (result.numAffectedRows === 0n) {
      this.unclaim(audit);
      await this.run(own ? 'rollback' : 'rollback to savepoint slipway_audit');
      return result;
    }
    if (own) {
      try {
        await this.run('commit');
      } catch (err) {
        this.unclaim(audit);
        throw err;
      }
    } else {
      await this.run('release savepoint slipway_audit');
      this.state.audited = audit;
    }
    return result;
  }

  private run(statement: string) {
    return this.inner.executeQuery(CompiledQuery.raw(statement));
  }

  private unclaim(audit: RequestAudit) {
    audit.claimed = false;
    audit.rowId = null;
  }

  streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    return this.inner.streamQuery<R>(query, chunkSize);
  }

  private async writeRow(audit: RequestAudit) {
    const { sql, values } = auditInsert(audit);
    const result = await this.inner.executeQuery<{ id: number }>(CompiledQuery.raw(sql, values));
    audit.rowId = Number(result.rows[0]!.id);
  }
}

class AuditingDriver implements Driver {
  private readonly wrappers = new WeakMap<DatabaseConnection, AuditingConnection>();
  savepoint?: Driver['savepoint'];
  rollbackToSavepoint?: Driver['rollbackToSavepoint'];
  releaseSavepoint?: Driver['releaseSavepoint'];

  constructor(private readonly inner: Driver) {
    const unwrap = (c: DatabaseConnection) => (c instanceof AuditingConnection ? c.inner : c);
    if (inner.savepoint) this.savepoint = (c, name, compile) => inner.savepoint!(unwrap(c), name, compile);
    if (inner.rollbackToSavepoint) this.rollbackToSavepoint = (c, name, compile) => inner.rollbackToSavepoint!(unwrap(c), name, compile);
    if (inner.releaseSavepoint) this.releaseSavepoint = (c, name, compile) => inner.releaseSavepoint!(unwrap(c), name, compile);
  }

  init() {
    return this.inner.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const connection = await this.inner.acquireConnection();
    let wrapper = this.wrappers.get(connection);
    if (!wrapper) this.wrappers.set(connection, (wrapper = new AuditingConnection(connection)));
    return wrapper;
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings) {
    const c = connection as AuditingConnection;
    await this.inner.beginTransaction(c.inner, settings);
    c.state.inTransaction = true;
    c.state.audited = null;
  }

  async commitTransaction(connection: DatabaseConnection) {
    const c = connection as AuditingConnection;
    try {
      await this.inner.commitTransaction(c.inner);
    } catch (err) {
      this.release(c);
      throw err;
    }
    c.state.inTransaction = false;
    c.state.audited = null;
  }

  async rollbackTransaction(connection: DatabaseConnection) {
    const c = connection as AuditingConnection;
    this.release(c);
    await this.inner.rollbackTransaction(c.inner);
  }

  /** The transaction's audit row is gone with it: the request's next write records one again. */
  private release(c: AuditingConnection) {
    const audit = c.state.audited;
    if (audit) {
      audit.claimed = false;
      audit.rowId = null;
    }
    c.state.inTransaction = false;
    c.state.audited = null;
  }

  releaseConnection(connection: DatabaseConnection) {
    return this.inner.releaseConnection((connection as AuditingConnection).inner);
  }

  destroy() {
    return this.inner.destroy();
  }
}

/** PostgreSQL, with each changing API request's audit row written in the transaction of its change. */
export class AuditingPostgresDialect extends PostgresDialect {
  constructor(config: PostgresDialectConfig) {
    super(config);
  }

  override createDriver(): Driver {
    return new AuditingDriver(super.createDriver());
  }
}
