import pg from 'pg';

export interface ScratchDatabase {
  url: string;
  /** Drops it (closing whatever is still connected). */
  drop(): Promise<void>;
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
export async function createScratchDatabase(adminUrl: string, name: string, template?: string): Promise<ScratchDatabase> {
  await adminQuery(adminUrl, `create database ${name}${template ? ` template ${template}` : ''}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => adminQuery(adminUrl, `drop database if exists ${name} with (force)`),
  };
}
