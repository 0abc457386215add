import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

// The embedded server's addresses, apart from embedded.ts (which loads the server's package): an edge process
// connects to the server without ever running it.

/** The role the platform connects as, owner of the `slipway` database and of nothing else. */
export const PLATFORM_ROLE = 'slipway';
export const PLATFORM_DATABASE = 'slipway';
/** The cluster's superuser (made by initdb): used only for the bootstrap at start. */
export const SUPERUSER = 'postgres';

/** Where the embedded server's socket directory is (the socket file in it is `.s.PGSQL.<port>`). */
export function embeddedSocketDir(dataDir: string): string {
  return join(resolve(dataDir), 'pg-socket');
}

/** A connection string over the embedded server's unix socket (`host` is the socket directory). */
export function socketUrl(dataDir: string, port: number, user: string, password: string, database: string): string {
  const host = encodeURIComponent(embeddedSocketDir(dataDir));
  return `postgres://${user}:${encodeURIComponent(password)}@${host}:${port}/${database}`;
}

/**
 * The superuser's connection to the embedded server of `dataDir` (its password is in
 * `DATA_DIR/postgres.password`, mode 0600). Only the bootstrap at start and the test suite's
 * set-up (which creates a database per test file) use it; the platform never does.
 */
export function embeddedSuperuserUrl(dataDir: string, port: number, database = 'postgres'): string {
  const password = readFileSync(join(dataDir, 'postgres.password'), 'utf8').trim();
  return socketUrl(dataDir, port, SUPERUSER, password, database);
}

/**
 * The platform role's connection to the embedded server of `dataDir`, for a process that does
 * not run that server itself (an edge process): null when the server was never set up.
 */
export function embeddedPlatformUrl(dataDir: string, port: number): string | null {
  const file = join(dataDir, `postgres.${PLATFORM_ROLE}.password`);
  if (!existsSync(file)) return null;
  return socketUrl(dataDir, port, PLATFORM_ROLE, readFileSync(file, 'utf8').trim(), PLATFORM_DATABASE);
}
