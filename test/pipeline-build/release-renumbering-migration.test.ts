import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { createDb, type Db } from '../../src/platform/db/database.js';
import { migrateTo, migrateToLatest } from '../../src/platform/db/migrate.js';
import { createScratchDatabase, type ScratchDatabase } from '../helpers/scratch-database.js';

/**
 * Migration 0009 (issue 19, one release numbering): an empty database migrated to 0008 gets
 * the old per-environment numbering (staging v1, v2 and production v1, v2 of one
 * application); after 0009 the versions count per application in creation order, with no
 * duplicates, ids (and so every foreign key) untouched.
 */
let scratch: ScratchDatabase;
let db: Db;

beforeAll(async () => {
  scratch = await createScratchDatabase(inject('postgresAdminUrl'), `t_renumber_${randomBytes(5).toString('hex')}`, {
    ownerUrl: inject('postgresOwnerUrl'),
  });
  db = createDb(scratch.url, 2);
  await migrateTo(db, '0008_streams');
});
afterAll(async () => {
  await db?.destroy();
  await scratch?.drop();
});

describe('migration 0009: release numbering per application', () => {
  it('renumbers duplicate per-environment versions into one sequence in creation order', async () => {
    const org = uuidv7();
    const project = uuidv7();
    const [app, other] = [uuidv7(), uuidv7()];
    const [production, staging] = [uuidv7(), uuidv7()];
    await sql`INSERT INTO organizations (id, name, slug) VALUES (${org}, 'Acme', 'acme')`.execute(db);
    await sql`INSERT INTO projects (id, organization_id, name, slug) VALUES (${project}, ${org}, 'Shop', 'shop')`.execute(db);
    await sql`INSERT INTO applications (id, project_id, name, slug) VALUES (${app}, ${project}, 'Web', 'web'), (${other}, ${project}, 'Api', 'api')`.execute(
      db,
    );
    await sql`INSERT INTO environments (id, project_id, name, slug, env_type) VALUES
      (${production}, ${project}, 'production', 'production', 'production'), (${staging}, ${project}, 'staging', 'staging', 'staging')`.execute(
      db,
    );
    // Old numbering: each environment counts from 1 (created in this order, a minute apart).
    const seeded = [
      { app, env: staging, version: 1 },
      { app, env: production, version: 1 },
      { app, env: staging, version: 2 },
      { app, env: production, version: 2 },
      { app: other, env: production, version: 1 },
    ].map((r, i) => ({ ...r, id: uuidv7(), at: new Date(Date.UTC(2026, 0, 1, 0, i)) }));
    for (const r of seeded) {
      await sql`INSERT INTO releases (id, application_id, environment_id, version, created_at)
        VALUES (${r.id}, ${r.app}, ${r.env}, ${r.version}, ${r.at})`.execute(db);
    }
    const duplicate = await sql`SELECT count(*)::int AS n FROM releases WHERE application_id = ${app} AND version = 1`.execute(db);
    expect((duplicate.rows[0] as { n: number }).n).toBe(2);

    const applied = await migrateToLatest(db);
    expect(applied[0]).toBe('0009_release_numbering');

    const rows = await db
      .selectFrom('releases')
      .select(['id', 'application_id', 'environment_id', 'version'])
      .orderBy('created_at')
      .execute();
    expect(rows).toEqual(seeded.map((r, i) => ({ id: r.id, application_id: r.app, environment_id: r.env, version: i < 4 ? i + 1 : 1 })));
    // The new constraint holds: a second v4 of the application is refused.
    await expect(
      sql`INSERT INTO releases (id, application_id, environment_id, version) VALUES (${uuidv7()}, ${app}, ${staging}, 4)`.execute(db),
    ).rejects.toThrow(/releases_app_version_key/);
  });
});
