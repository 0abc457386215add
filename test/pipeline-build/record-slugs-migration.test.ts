import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDb, type Db } from '../../src/platform/db/database.js';
import { migrateTo, migrateToLatest } from '../../src/platform/db/migrate.js';
import { createScratchDatabase, type ScratchDatabase } from '../helpers/scratch-database.js';

/**
 * Migration 0066 (issue 35): releases and deployments written before it get their environment's slug,
 * and deployments their release's version, from the rows they reference; afterwards PostgreSQL writes both.
 */
let scratch: ScratchDatabase;
let db: Db;

beforeAll(async () => {
  scratch = await createScratchDatabase(inject('postgresAdminUrl'), `t_slugs_${randomBytes(5).toString('hex')}`, {
    ownerUrl: inject('postgresOwnerUrl'),
  });
  db = createDb(scratch.url, 2);
  await migrateTo(db, '0065_release_versions');
});
afterAll(async () => {
  await db?.destroy();
  await scratch?.drop();
});

describe('migration 0066: the environment slug and release version on each record', () => {
  it('fills them in from the environments and releases the records name', async () => {
    const [org, project, app] = [uuidv7(), uuidv7(), uuidv7()];
    const [production, staging] = [uuidv7(), uuidv7()];
    const [r1, r2] = [uuidv7(), uuidv7()];
    const [d1, d2] = [uuidv7(), uuidv7()];
    await sql`INSERT INTO organizations (id, name, slug) VALUES (${org}, 'Acme', 'acme')`.execute(db);
    await sql`INSERT INTO projects (id, organization_id, name, slug) VALUES (${project}, ${org}, 'Shop', 'shop')`.execute(db);
    await sql`INSERT INTO applications (id, project_id, name, slug) VALUES (${app}, ${project}, 'Web', 'web')`.execute(db);
    await sql`INSERT INTO environments (id, project_id, name, slug, env_type) VALUES
      (${production}, ${project}, 'production', 'production', 'production'), (${staging}, ${project}, 'staging', 'staging', 'staging')`.execute(
      db,
    );
    await sql`INSERT INTO releases (id, application_id, environment_id, version) VALUES
      (${r1}, ${app}, ${staging}, 1), (${r2}, ${app}, ${production}, 2)`.execute(db);
    // A deployment of the staging release into production (as a promotion records it).
    await sql`INSERT INTO deployments (id, application_id, environment_id, release_id) VALUES
      (${d1}, ${app}, ${staging}, ${r1}), (${d2}, ${app}, ${production}, ${r1})`.execute(db);

    expect(await migrateToLatest(db)).toContain('0066_record_environment_slugs');

    const releases = await db.selectFrom('releases').select(['id', 'environment_slug']).orderBy('version').execute();
    expect(releases).toEqual([
      { id: r1, environment_slug: 'staging' },
      { id: r2, environment_slug: 'production' },
    ]);
    const deployments = await db.selectFrom('deployments').select(['id', 'environment_slug', 'release_version']).orderBy('id').execute();
    expect(deployments).toEqual([
      { id: d1, environment_slug: 'staging', release_version: 1 },
      { id: d2, environment_slug: 'production', release_version: 1 },
    ]);
    // Afterwards PostgreSQL writes them, whatever a writer sends: a wrong slug is not stored.
    const [r3, d3] = [uuidv7(), uuidv7()];
    await sql`INSERT INTO releases (id, application_id, environment_id, environment_slug, version)
      VALUES (${r3}, ${app}, ${staging}, 'production', 3)`.execute(db);
    await sql`INSERT INTO deployments (id, application_id, environment_id, release_id, release_version)
      VALUES (${d3}, ${app}, ${production}, ${r3}, 99)`.execute(db);
    expect(await db.selectFrom('releases').select('environment_slug').where('id', '=', r3).executeTakeFirstOrThrow()).toEqual({
      environment_slug: 'staging',
    });
    expect(
      await db.selectFrom('deployments').select(['environment_slug', 'release_version']).where('id', '=', d3).executeTakeFirstOrThrow(),
    ).toEqual({ environment_slug: 'production', release_version: 3 });
    await expect(sql`UPDATE releases SET environment_slug = 'production' WHERE id = ${r3}`.execute(db)).resolves.toBeDefined();
    expect(
      (await db.selectFrom('releases').select('environment_slug').where('id', '=', r3).executeTakeFirstOrThrow()).environment_slug,
    ).toBe('staging');
    // A release naming no environment is still the foreign key's refusal; one naming none at all, NOT NULL's.
    await expect(
      sql`INSERT INTO releases (id, application_id, environment_id, version) VALUES (${uuidv7()}, ${app}, ${uuidv7()}, 4)`.execute(db),
    ).rejects.toMatchObject({ code: '23503' });
    await expect(
      sql`INSERT INTO releases (id, application_id, environment_id, version) VALUES (${uuidv7()}, ${app}, NULL, 4)`.execute(db),
    ).rejects.toMatchObject({ code: '23502', column: 'environment_id' });

    // Nothing renames an environment or renumbers a release today; should something, the copies follow.
    await sql`UPDATE environments SET slug = 'stage' WHERE id = ${staging}`.execute(db);
    await sql`UPDATE releases SET version = 30 WHERE id = ${r3}`.execute(db);
    expect(
      await db.selectFrom('releases').select(['id', 'environment_slug']).where('environment_id', '=', staging).orderBy('version').execute(),
    ).toEqual([
      { id: r1, environment_slug: 'stage' },
      { id: r3, environment_slug: 'stage' },
    ]);
    expect(await db.selectFrom('deployments').select(['id', 'environment_slug', 'release_version']).orderBy('id').execute()).toEqual([
      { id: d1, environment_slug: 'stage', release_version: 1 },
      { id: d2, environment_slug: 'production', release_version: 1 },
      { id: d3, environment_slug: 'production', release_version: 30 },
    ]);
  });
});
