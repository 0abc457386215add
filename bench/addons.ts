/**
 * Add-ons (issue 31): time from provisioning (the `addons create` request's work: a Postgres
 * cluster's initdb, the sandbox, the server's start) until it accepts an authenticated
 * connection, and the idle memory of one add-on (proportional set size of its processes, so
 * Postgres' shared buffers count once; its network helper, pasta, separately). Median of N runs.
 *
 *   DATABASE_URL=postgres://superuser@…/postgres npx tsx bench/addons.ts [--runs 5] [--idle 5]
 *
 * Needs root, bubblewrap, pasta, Debian's postgresql and redis-server, and a PostgreSQL server for
 * the platform's own records (a scratch database is created there and dropped after).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { v7 as uuidv7 } from 'uuid';
import { loadConfig } from '../src/config.js';
import { generateKeyText, parseKey, SecretBox } from '../src/platform/crypto/secret-box.js';
import { createDb } from '../src/platform/db/database.js';
import { migrateToLatest } from '../src/platform/db/migrate.js';
import type { AddonKind } from '../src/platform/db/schema.js';
import { AddonSupervisor, newCredentials, sealCredentials } from '../src/platform/addons/index.js';
import { createSandbox } from '../src/platform/sandbox/index.js';
import { createScratchDatabase } from '../test/helpers/scratch-database.js';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) || fallback : fallback;
};
const runs = arg('--runs', 5);
const idleSeconds = arg('--idle', 5);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);

/** Proportional set size of every process in the group (shared pages split between their users). */
async function groupPss(group: number): Promise<number> {
  let total = 0;
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => null);
    if (!stat || Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]) !== group) continue;
    const rollup = await readFile(`/proc/${entry}/smaps_rollup`, 'utf8').catch(() => '');
    total += Number(/^Pss:\s+(\d+) kB/m.exec(rollup)?.[1] ?? 0) * 1024;
  }
  return total;
}

/** Proportional set size of the pasta forwarding the add-on's port. */
async function helperRss(port: number): Promise<number> {
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const argv = (await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '')).split('\0');
    if (!argv[0]?.endsWith('pasta') || !argv.some((a) => a.startsWith(`127.0.0.1/${port}:`))) continue;
    const rollup = await readFile(`/proc/${entry}/smaps_rollup`, 'utf8');
    return Number(/^Pss:\s+(\d+) kB/m.exec(rollup)?.[1] ?? 0) * 1024;
  }
  return 0;
}

async function main() {
  const adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) throw new Error('set DATABASE_URL to a PostgreSQL superuser URL (a scratch database is made there)');
  const database = await createScratchDatabase(adminUrl, `slipway_bench_addons_${randomBytes(4).toString('hex')}`);
  const dataDir = mkdtempSync(join(tmpdir(), 'slipway-bench-addons-'));
  const config = loadConfig({}, { DATA_DIR: dataDir, DATABASE_URL: database.url });
  const db = createDb(database.url, 4);
  const secrets = new SecretBox({ current: parseKey(generateKeyText()), previous: [] });
  const supervisor = new AddonSupervisor(db, secrets, createSandbox(config, db)!, join(dataDir, 'addons'), { warn: () => {} });
  try {
    await migrateToLatest(db);
    const org = { id: uuidv7(), name: 'Bench', slug: 'bench' };
    await db.insertInto('organizations').values(org).execute();
    await supervisor.start();
    for (const kind of ['postgres', 'redis'] as AddonKind[]) {
      const ready: number[] = [];
      const pss: number[] = [];
      const helper: number[] = [];
      for (let i = 0; i < runs; i++) {
        const record = await db
          .insertInto('addons')
          .values({
            id: uuidv7(),
            organization_id: org.id,
            name: `${kind}-${i}`,
            kind,
            plan: 'hobby',
            port: 15400 + i,
            credentials_sealed: sealCredentials(secrets, newCredentials(kind)),
          })
          .returningAll()
          .executeTakeFirstOrThrow();
        const started = performance.now();
        await supervisor.provision(record);
        ready.push(performance.now() - started);
        await new Promise((r) => setTimeout(r, idleSeconds * 1000));
        pss.push(await groupPss(supervisor.pidOf(record.id)!));
        helper.push(await helperRss(record.port));
        await supervisor.remove(record.id);
        await db.deleteFrom('addons').where('id', '=', record.id).execute();
      }
      console.log(
        `${kind}: create → accepting connections median ${median(ready).toFixed(0)} ms (min ${Math.min(...ready).toFixed(0)}, max ${Math.max(...ready).toFixed(0)}); ` +
          `idle memory (PSS, after ${idleSeconds} s) median ${mib(median(pss))} MiB, plus its pasta ${mib(median(helper))} MiB PSS`,
      );
    }
  } finally {
    await supervisor.shutdown();
    await db.destroy();
    await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
