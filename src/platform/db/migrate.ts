import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Migrator, sql, type Migration, type MigrationProvider } from 'kysely';
import { programFiles } from '../../program-files.js';
import type { Db } from './database.js';

const MIGRATIONS_DIR = programFiles.migrations;

const migrationFiles = async () => (await readdir(MIGRATIONS_DIR)).filter((f) => /^\d{4}_.+\.sql$/.test(f)).sort();

/** Numbered plain-SQL files (`0001_name.sql`), applied in order inside Kysely's migration lock. */
class SqlFileMigrationProvider implements MigrationProvider {
  async getMigrations(): Promise<Record<string, Migration>> {
    const files = await migrationFiles();
    const migrations: Record<string, Migration> = {};
    for (const file of files) {
      const text = await readFile(join(MIGRATIONS_DIR, file), 'utf8');
      migrations[file.replace(/\.sql$/, '')] = { up: async (db) => void (await sql.raw(text).execute(db)) };
    }
    return migrations;
  }
}

export async function migrateToLatest(db: Db): Promise<string[]> {
  if (await upToDate(db)) return [];
  const migrator = new Migrator({ db, provider: new SqlFileMigrationProvider() });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/** Applies migrations up to and including `name` (e.g. `0008_streams`): tests of a migration's data changes. */
export async function migrateTo(db: Db, name: string): Promise<void> {
  const migrator = new Migrator({ db, provider: new SqlFileMigrationProvider() });
  const { error } = await migrator.migrateTo(name);
  if (error) throw error instanceof Error ? error : new Error(String(error));
}

/**
 * Whether the database has applied exactly the migrations there are, in two short queries: the usual start. Kysely's
 * migrator first makes sure of its tables (catalogue queries) and takes its lock, ~0.15 s of each start; anything
 * else (a new migration, a fresh database, another process migrating: its rows appear only when it commits) goes
 * to the migrator, which decides under its lock.
 */
async function upToDate(db: Db): Promise<boolean> {
  // Asked first, so that a fresh database's log shows no failed query.
  const table = await sql<{ present: boolean }>`select to_regclass('kysely_migration') is not null as present`.execute(db);
  if (!table.rows[0]?.present) return false;
  const [files, applied] = await Promise.all([migrationFiles(), sql<{ name: string }>`select name from kysely_migration`.execute(db)]);
  const names = applied.rows.map((row) => row.name).sort();
  return names.length === files.length && files.every((file, i) => file.replace(/\.sql$/, '') === names[i]);
}
