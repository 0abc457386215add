import pg from 'pg';

export interface ScratchDatabase {
  /** The owner's connection (the test suite's non-superuser role, like the platform's in production). */
  url: string;
  /** Drops it (closing whatever is still connected). */
  drop(): Promise<void>;
}

export interface ScratchDatabaseOptions {
  /** Cloned from this database (the migrated template). */
  template?: string;
  /**
   * A connection string of the role that owns the new database (and that the returned URL
   * connects as): the test suite's owner role (`inject('postgresOwnerUrl')`), a non-superuser as
   * the platform's role is in production. Unset: the admin's own connection.
   */
  ownerUrl?: string;
}

async function adminQuery(adminUrl: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

/**
 * Creates database `name` (optionally from a template) on the server of `adminUrl`, for a
 * test file or a benchmark run; the caller drops it when done.
 */
export async function createScratchDatabase(
  adminUrl: string,
  name: string,
  options: ScratchDatabaseOptions = {},
): Promise<ScratchDatabase> {
  const owner = options.ownerUrl ? decodeURIComponent(new URL(options.ownerUrl).username) : null;
  await adminQuery(
    adminUrl,
    `create database ${name}${options.template ? ` template ${options.template}` : ''}${owner ? ` owner ${pg.escapeIdentifier(owner)}` : ''}`,
  );
  const url = new URL(options.ownerUrl ?? adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => adminQuery(adminUrl, `drop database if exists ${name} with (force)`),
  };
}

/**
 * Lets connections into the database of `databaseUrl` again, or refuses new ones and ends those open: what
 * the platform sees when its server goes away for a while (a restart, a failover), for this database alone
 * (the test files' server is shared). `adminUrl`: a superuser's (`inject('postgresAdminUrl')`).
 */
export async function setDatabaseReachable(adminUrl: string, databaseUrl: string, reachable: boolean): Promise<void> {
  const name = decodeURIComponent(new URL(databaseUrl).pathname.slice(1));
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`ALTER DATABASE ${pg.escapeIdentifier(name)} ALLOW_CONNECTIONS ${reachable}`);
    if (!reachable) await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [name]);
  } finally {
    await admin.end();
  }
}
