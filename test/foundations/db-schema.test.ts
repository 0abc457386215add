/**
 * src/platform/db/schema.ts is written by hand: this test migrates an empty database and compares
 * what the migrations made (information_schema) with what the TypeScript interfaces say, table by
 * table and column by column, so a migration without its types (or types without a migration)
 * fails CI with the exact difference.
 */
import { resolve } from 'node:path';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDb, type Db } from '../../src/platform/db/database.js';
import { migrateToLatest } from '../../src/platform/db/migrate.js';
import { createScratchDatabase, type ScratchDatabase } from '../helpers/scratch-database.js';
import { sql } from 'kysely';

const SCHEMA_FILE = resolve(import.meta.dirname, '../../src/platform/db/schema.ts');
/** Kysely's own bookkeeping, not the platform's data. */
const MIGRATOR_TABLES = new Set(['kysely_migration', 'kysely_migration_lock']);

/** What a column reads as in TypeScript, coarsely: enough to catch a wrong type, not to restate it. */
type Kind = 'string' | 'number' | 'boolean' | 'Date' | 'array' | 'Buffer' | 'json';

interface ColumnShape {
  kinds: Set<Kind>;
  nullable: boolean;
  /** `unknown` (or `any`) is among its types: it says nothing about null. */
  anyValue: boolean;
  /** May an insert leave it out (`Generated<…>`, or `undefined` in a ColumnType's insert type)? */
  insertOptional: boolean;
}

/** How `pg` (with src/platform/db/database.ts's parsers) hands each PostgreSQL type to the code. */
function kindOfColumn(dataType: string, udtName: string): Kind {
  switch (dataType) {
    case 'uuid':
    case 'text':
    case 'character varying':
    case 'character':
    case 'citext':
    case 'inet':
    case 'cidr':
    case 'numeric':
    case 'USER-DEFINED':
      return 'string';
    case 'smallint':
    case 'integer':
    case 'bigint': // INT8 is parsed as a number (database.ts)
    case 'real':
    case 'double precision':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'timestamp with time zone':
    case 'timestamp without time zone':
    case 'date':
      return 'Date';
    case 'json':
    case 'jsonb':
      return 'json';
    case 'ARRAY':
      return 'array';
    case 'bytea':
      return 'Buffer';
    default:
      throw new Error(`no TypeScript kind known for PostgreSQL type ${dataType} (${udtName}): add it to kindOfColumn`);
  }
}

interface DbColumn {
  table_name: string;
  column_name: string;
  data_type: string;
  udt_name: string;
  is_nullable: 'YES' | 'NO';
  column_default: string | null;
  is_identity: 'YES' | 'NO';
  is_generated: string;
}

async function migratedColumns(db: Db): Promise<Map<string, Map<string, DbColumn>>> {
  const { rows } = await sql<DbColumn>`
    select c.table_name, c.column_name, c.data_type, c.udt_name, c.is_nullable, c.column_default, c.is_identity, c.is_generated
    from information_schema.columns c
    join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
    where c.table_schema = 'public' and t.table_type = 'BASE TABLE'
    order by c.table_name, c.ordinal_position`.execute(db);
  const tables = new Map<string, Map<string, DbColumn>>();
  for (const row of rows) {
    if (MIGRATOR_TABLES.has(row.table_name)) continue;
    if (!tables.has(row.table_name)) tables.set(row.table_name, new Map());
    tables.get(row.table_name)!.set(row.column_name, row);
  }
  return tables;
}

/** The tables of schema.ts's `Database` interface, each column as its select and insert types read. */
function declaredColumns(): Map<string, Map<string, ColumnShape>> {
  const program = ts.createProgram([SCHEMA_FILE], {
    strict: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    skipLibCheck: true,
    types: [],
  });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(SCHEMA_FILE)!;
  const database = source.statements.find((s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && s.name.text === 'Database');
  if (!database) throw new Error('schema.ts declares no `Database` interface');

  const kindsOf = (type: ts.Type, into: ColumnShape): void => {
    if (type.isUnion()) {
      for (const member of type.types) kindsOf(member, into);
      return;
    }
    const flags = type.getFlags();
    if (flags & ts.TypeFlags.Null) into.nullable = true;
    else if (flags & (ts.TypeFlags.Unknown | ts.TypeFlags.Any)) {
      into.anyValue = true;
      into.kinds.add('json');
    } else if (flags & (ts.TypeFlags.StringLike | ts.TypeFlags.TemplateLiteral)) into.kinds.add('string');
    else if (flags & ts.TypeFlags.NumberLike) into.kinds.add('number');
    else if (flags & ts.TypeFlags.BooleanLike) into.kinds.add('boolean');
    else if (checker.isArrayType(type) || checker.isTupleType(type)) into.kinds.add('array');
    else if (type.getSymbol()?.getName() === 'Date') into.kinds.add('Date');
    else if (type.getSymbol()?.getName() === 'Buffer') into.kinds.add('Buffer');
    else into.kinds.add('json');
  };
  const hasUndefined = (type: ts.Type): boolean =>
    type.isUnion() ? type.types.some(hasUndefined) : (type.getFlags() & ts.TypeFlags.Undefined) !== 0;

  const tables = new Map<string, Map<string, ColumnShape>>();
  const databaseType = checker.getTypeAtLocation(database.name);
  for (const table of checker.getPropertiesOfType(databaseType)) {
    const columns = new Map<string, ColumnShape>();
    const tableType = checker.getTypeOfSymbolAtLocation(table, database);
    for (const column of checker.getPropertiesOfType(tableType)) {
      const declared = checker.getTypeOfSymbolAtLocation(column, database);
      // Kysely's ColumnType<S, I, U> (and Generated<T>) carry the select and insert types as phantom properties.
      const select = declared.getProperty('__select__');
      const insert = declared.getProperty('__insert__');
      const shape: ColumnShape = { kinds: new Set(), nullable: false, anyValue: false, insertOptional: false };
      kindsOf(select ? checker.getTypeOfSymbolAtLocation(select, database) : declared, shape);
      shape.insertOptional = insert ? hasUndefined(checker.getTypeOfSymbolAtLocation(insert, database)) : false;
      columns.set(column.getName(), shape);
    }
    tables.set(table.getName(), columns);
  }
  return tables;
}

/**
 * Columns a BEFORE INSERT trigger writes whatever the insert sends (migration 0066: copies of a referenced row), by the
 * trigger that writes each. An insert may leave them out; the test checks that each trigger is there.
 */
const FILLED_BY_TRIGGER: Record<string, string> = {
  'releases.environment_slug': 'releases_environment_slug',
  'deployments.environment_slug': 'deployments_environment_slug',
  'deployments.release_version': 'deployments_release_version',
};

/** The enabled BEFORE INSERT row triggers of the migrated database, as `table.trigger`. */
async function insertTriggers(db: Db): Promise<Set<string>> {
  // tgtype bits: 1 row, 2 before, 4 insert.
  const { rows } = await sql<{ name: string }>`
    select c.relname || '.' || t.tgname as name from pg_trigger t join pg_class c on c.oid = t.tgrelid
    where not t.tgisinternal and t.tgenabled <> 'D' and t.tgtype & 7 = 7`.execute(db);
  return new Set(rows.map((r) => r.name));
}

/** Every difference between the migrated database and schema.ts, one line each. */
function differences(
  migrated: Map<string, Map<string, DbColumn>>,
  declared: Map<string, Map<string, ColumnShape>>,
  triggers: Set<string>,
): string[] {
  const found: string[] = [];
  for (const table of migrated.keys()) if (!declared.has(table)) found.push(`${table}: a table of the migrations missing from schema.ts`);
  for (const table of declared.keys()) if (!migrated.has(table)) found.push(`${table}: in schema.ts, but no migration creates it`);
  for (const [table, columns] of migrated) {
    const types = declared.get(table);
    if (!types) continue;
    for (const name of types.keys()) if (!columns.has(name)) found.push(`${table}.${name}: in schema.ts, but not a column of the table`);
    for (const [name, column] of columns) {
      const shape = types.get(name);
      const where = `${table}.${name} (${column.data_type}${column.is_nullable === 'YES' ? ', null' : ', not null'})`;
      if (!shape) {
        found.push(`${where}: a column missing from schema.ts`);
        continue;
      }
      const expected = kindOfColumn(column.data_type, column.udt_name);
      const kinds = [...shape.kinds];
      // jsonb holds whatever the code stores there: any declared type but null-ness is fine.
      if (expected !== 'json' && (kinds.length !== 1 || kinds[0] !== expected))
        found.push(`${where}: schema.ts reads it as ${kinds.join(' | ') || 'never'}, the column gives ${expected}`);
      const nullable = column.is_nullable === 'YES';
      if (nullable !== shape.nullable && !shape.anyValue)
        found.push(
          `${where}: schema.ts says ${shape.nullable ? 'it may be null' : 'it is never null'}, the column ${nullable ? 'allows null' : 'is not null'}`,
        );
      const trigger = FILLED_BY_TRIGGER[`${table}.${name}`];
      const filledByDatabase =
        nullable ||
        column.column_default !== null ||
        column.is_identity === 'YES' ||
        column.is_generated === 'ALWAYS' ||
        (trigger !== undefined && triggers.has(`${table}.${trigger}`));
      if (shape.insertOptional && !filledByDatabase) found.push(`${where}: schema.ts lets an insert leave it out, but it has no default`);
    }
  }
  return found;
}

let scratch: ScratchDatabase;
let db: Db;
beforeAll(async () => {
  scratch = await createScratchDatabase(inject('postgresAdminUrl'), `slipway_schema_${process.pid}`, {
    ownerUrl: inject('postgresOwnerUrl'),
  });
  db = createDb(scratch.url, 1);
  await migrateToLatest(db);
});
afterAll(async () => {
  await db?.destroy();
  await scratch?.drop();
});

describe('src/platform/db/schema.ts', () => {
  it('declares every table and column the migrations create, with their types and nullability', async () => {
    const migrated = await migratedColumns(db);
    const declared = declaredColumns();
    expect(migrated.size).toBeGreaterThan(30);
    expect(declared.get('applications')?.get('slug')).toEqual({
      kinds: new Set(['string']),
      nullable: false,
      anyValue: false,
      insertOptional: false,
    });
    const found = differences(migrated, declared, await insertTriggers(db));
    expect(found, `schema.ts differs from the migrations:\n${found.join('\n')}`).toEqual([]);
  });
});
