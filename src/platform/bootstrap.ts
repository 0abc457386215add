import type { Config } from '../config.js';
import type { AppContext } from './context.js';
import { loadKeyring, SecretBox } from './crypto/secret-box.js';
import { createDb } from './db/database.js';
import { startEmbeddedPostgres } from './db/embedded.js';
import { migrateToLatest } from './db/migrate.js';
import { PipelineJobs } from './jobs/pipeline-jobs.js';
import { createRuntime } from './runtime/index.js';

export interface Platform {
  ctx: AppContext;
  databaseUrl: string;
  close(): Promise<void>;
}

export interface PlatformOptions {
  /** false for one-shot tools (the CLI): no job store, no runtime. */
  pipeline?: boolean;
}

/**
 * Opens what every process needs: the database (the one in DATABASE_URL, or the embedded
 * server in the data directory), migrated to the latest version, and the secret keyring;
 * for server processes also the job store and (unless `api` role) the runtime.
 */
export async function openPlatform(config: Config, log: (line: string) => void = () => {}, options: PlatformOptions = {}): Promise<Platform> {
  const pipeline = options.pipeline ?? true;
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
  // The job store opens here (every role enqueues); main.ts starts the workers once handlers are registered.
  const jobs = pipeline ? new PipelineJobs({ databaseUrl, db, concurrency: config.PIPELINE_CONCURRENCY }) : undefined;
  await jobs?.start();
  // Processes that run workers also run the deployed applications and the router (main.ts starts them).
  const runtime = !pipeline || config.SLIPWAY_ROLE === 'api' ? undefined : createRuntime(config, db);
  return {
    ctx: { config, db, secrets, jobs, runtime },
    databaseUrl,
    async close() {
      await jobs?.stop();
      await runtime?.shutdown();
      await db.destroy();
      await embedded?.stop();
    },
  };
}
