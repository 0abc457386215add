import type { Config } from '../config.js';
import type { AppContext } from './context.js';
import { loadKeyring, SecretBox } from './crypto/secret-box.js';
import { createDb, databaseAvailability } from './db/database.js';
import { startEmbeddedPostgres } from './db/embedded.js';
import { migrateToLatest } from './db/migrate.js';
import { databaseRolePowers, hostReachingRoleMessage } from './db/role-check.js';
import { PipelineJobs, type JobsLogger } from './jobs/pipeline-jobs.js';
import { applicationJobPorts } from './jobs/application-ports.js';
import { pipelineLimits } from './jobs/job-store.js';
import { createRuntime } from './runtime/index.js';
import { StartupError } from './startup-error.js';

export interface Platform {
  ctx: AppContext;
  databaseUrl: string;
  close(): Promise<void>;
}

export interface PlatformOptions {
  /** false for one-shot tools (the CLI): no job store, no runtime. */
  pipeline?: boolean;
  /** Slipway's own start-up notices (migrations applied), apart from the database's output. */
  notice?: (line: string) => void;
  /** The job store's logger (the process's own, built before the platform opens). */
  jobsLogger?: JobsLogger;
}

/**
 * Opens what every process needs: the database (the one in DATABASE_URL, or the embedded
 * server in the data directory), migrated to the latest version, and the secret keyring;
 * for server processes also the job store and (unless `api` role) the runtime.
 */
export async function openPlatform(
  config: Config,
  log: (line: string) => void = () => {},
  options: PlatformOptions = {},
): Promise<Platform> {
  const pipeline = options.pipeline ?? true;
  const notice = options.notice ?? log;
  const embedded = config.DATABASE_URL ? null : await startEmbeddedPostgres(config.dataDir, config.EMBEDDED_PG_PORT, log, notice);
  const databaseUrl = config.DATABASE_URL ?? embedded!.url;
  const db = createDb(databaseUrl);
  // Issue 37: the operator hears once that the database went away and once that it is back (requests get 503 meanwhile).
  databaseAvailability(db).onChange((up, cause) =>
    notice(
      up
        ? 'the database answers again'
        : `the database is unreachable (${cause instanceof Error ? cause.message : String(cause)}); requests get 503 until it is back`,
    ),
  );
  let secrets: SecretBox;
  let jobs: PipelineJobs | undefined;
  try {
    let powers;
    try {
      powers = await databaseRolePowers(db);
    } catch (err) {
      throw databaseUnusable(err, databaseUrl);
    }
    // Issue 27: a superuser's password opens the database host; the start refuses it unless told otherwise.
    if (powers.hostReaching.length > 0) {
      const message = hostReachingRoleMessage(powers, config.DATABASE_ALLOW_SUPERUSER);
      if (!config.DATABASE_ALLOW_SUPERUSER) throw new StartupError(message);
      (options.notice ?? log)(message);
    } else if (powers.excess.length > 0)
      (options.notice ?? log)(
        `note: DATABASE_URL's role "${powers.role}" also has ${powers.excess.join(', ')}; Slipway needs none of them (docs/operations.md "Database role")`,
      );
    try {
      const applied = await migrateToLatest(db);
      if (applied.length > 0) (options.notice ?? log)(`applied migrations: ${applied.join(', ')}`);
    } catch (err) {
      throw databaseUnusable(err, databaseUrl);
    }
    secrets = new SecretBox(loadKeyring(config.dataDir, config.SECRET_KEY, config.SECRET_KEY_PREVIOUS));
    // The job store opens here (every role enqueues); src/lifecycle.ts starts the workers.
    jobs = pipeline
      ? new PipelineJobs({
          db,
          concurrency: config.PIPELINE_CONCURRENCY,
          organizationLimits: pipelineLimits(config),
          ports: applicationJobPorts(db),
          logger: options.jobsLogger,
        })
      : undefined;
    await jobs?.start();
  } catch (err) {
    // Nothing opened so far may outlive a failed start (the embedded server would be orphaned).
    await jobs?.stop().catch(() => {}); // the start's own error is the one to report
    await db.destroy().catch(() => {}); // same: the start's error is reported
    await embedded?.stop();
    throw err;
  }
  // Processes that run workers also run the deployed applications and the router (src/lifecycle.ts starts them).
  const runtime = !pipeline || config.SLIPWAY_ROLE === 'api' ? undefined : await createRuntime(config, db, databaseUrl);
  return {
    ctx: { config, db, secrets, jobs, runtime, databaseUrl },
    databaseUrl,
    async close() {
      await jobs?.stop();
      await runtime?.shutdown();
      await db.destroy();
      await embedded?.stop();
    },
  };
}

/** Says which database could not be used, without its password. */
function databaseUnusable(err: unknown, databaseUrl: string): StartupError {
  let where = 'the database';
  try {
    const url = new URL(databaseUrl);
    // A unix socket's directory is the host, percent-encoded.
    where = `the database ${decodeURIComponent(url.hostname)}${url.port ? `:${url.port}` : ''}${url.pathname}`;
  } catch {
    where = 'the database in DATABASE_URL (not a valid postgres:// URL)';
  }
  const cause = err instanceof Error ? err.message : String(err);
  const code = (err as { code?: unknown })?.code;
  return new StartupError(`cannot use ${where}: ${cause}${typeof code === 'string' && !cause.includes(code) ? ` (${code})` : ''}`);
}
