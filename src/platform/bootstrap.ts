import type { Config } from '../config.js';
import type { AppContext } from './context.js';
import { loadKeyring, SecretBox } from './crypto/secret-box.js';
import { createDb } from './db/database.js';
import { startEmbeddedPostgres } from './db/embedded.js';
import { migrateToLatest } from './db/migrate.js';

export interface Platform {
  ctx: AppContext;
  databaseUrl: string;
  close(): Promise<void>;
}

/**
 * Opens what every process needs: the database (the one in DATABASE_URL, or the embedded
 * server in the data directory), migrated to the latest version, and the secret keyring.
 */
export async function openPlatform(config: Config, log: (line: string) => void = () => {}): Promise<Platform> {
  const embedded = config.DATABASE_URL ? null : await startEmbeddedPostgres(config.dataDir, config.EMBEDDED_PG_PORT, log);
  const databaseUrl = config.DATABASE_URL ?? embedded!.url;
  const db = createDb(databaseUrl);
  try {
    const applied = await migrateToLatest(db);
    if (applied.length > 0) log(`applied migrations: ${applied.join(', ')}`);
  } catch (err) {
    await db.destroy();
    await embedded?.stop();
    throw err;
  }
  const secrets = new SecretBox(loadKeyring(config.dataDir, config.SECRET_KEY, config.SECRET_KEY_PREVIOUS));
  return {
    ctx: { config, db, secrets },
    databaseUrl,
    async close() {
      await db.destroy();
      await embedded?.stop();
    },
  };
}
