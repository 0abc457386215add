/**
 * Add-ons (issue 31): time from provisioning (the `addons create` request's work: a Postgres
 * cluster from the platform's template, the sandbox, the server's start) until it accepts an
 * authenticated connection, with where that time goes (the supervisor's steps), and the idle
 * memory of one add-on: everything it costs, as proportional set size (shared pages split
 * between their users, so Postgres' shared buffers count once): the server's processes, what
 * forwards its port, and the shim that supervises it. Median of N runs.
 *
 *   DATABASE_URL=postgres://superuser@…/postgres npx tsx bench/addons.ts [--runs 5] [--idle 5]
 *
 * Needs root, bubblewrap, systemd (its socket proxy), Debian's postgresql and redis-server, and a PostgreSQL server for
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
import { INSTANCE_ID_VARIABLE } from '../src/platform/runtime/local/shim-client.js';
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

async function pssOf(pid: string): Promise<number> {
  const rollup = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8').catch(() => '');
  return Number(/^Pss:\s+(\d+) kB/m.exec(rollup)?.[1] ?? 0) * 1024;
}

/**
 * Proportional set size of what forwards the add-on's port: its pasta, or its forwarder's
 * processes (systemd-socket-activate/-proxyd, and the bubblewrap around them).
 */
async function helperPss(port: number): Promise<number> {
  let total = 0;
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const argv = (await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '')).split('\0');
    const pasta = argv[0]?.endsWith('pasta') && argv.some((a) => a.startsWith(`127.0.0.1/${port}:`));
    const forwarder =
      /(^|\/)(bwrap|systemd-socket-activate|systemd-socket-proxyd)$/.test(argv[0] ?? '') &&
      argv.some((a) => a === `127.0.0.1:${port}` || a.endsWith(`/.s.PGSQL.${port}`) || a.endsWith(`/redis-${port}.sock`));
    if (pasta || forwarder) total += await pssOf(entry);
  }
  return total;
}

/** Proportional set size of the add-on's shim (the node process that supervises its server, marked with its id). */
async function shimPss(id: string): Promise<number> {
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const environ = await readFile(`/proc/${entry}/environ`, 'utf8').catch(() => '');
    if (environ.split('\0').includes(`${INSTANCE_ID_VARIABLE}=${id}`) && (await readFile(`/proc/${entry}/comm`, 'utf8')).trim() === 'node')
      return pssOf(entry);
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
  // Each step of a provision, as milliseconds since it began (the supervisor calls trace as a step ends).
  let steps: Array<[string, number]> = [];
  let began = 0;
  const trace = (step: string) => steps.push([step, performance.now() - began]);
  const supervisor = new AddonSupervisor(db, secrets, createSandbox(config, db)!, join(dataDir, 'addons'), { warn: () => {} }, { trace });
  try {
    await migrateToLatest(db);
    const org = { id: uuidv7(), name: 'Bench', slug: 'bench' };
    await db.insertInto('organizations').values(org).execute();
    await supervisor.start();
    for (const kind of ['postgres', 'redis'] as AddonKind[]) {
      const ready: number[] = [];
      const pss: number[] = [];
      const helper: number[] = [];
      const shim: number[] = [];
      const stepRuns = new Map<string, number[]>();
      const create = (i: number, port: number) =>
        db
          .insertInto('addons')
          .values({
            id: uuidv7(),
            organization_id: org.id,
            name: `${kind}-${port}`,
            kind,
            plan: 'hobby',
            port,
            credentials_sealed: sealCredentials(secrets, newCredentials(kind)),
          })
          .returningAll()
          .executeTakeFirstOrThrow();
      /** Everything one add-on costs: its server's processes, what forwards its port, its shim. */
      const costOf = async (record: { id: string; port: number }) =>
        [await groupPss(supervisor.pidOf(record.id)!), await helperPss(record.port), await shimPss(record.id)] as const;
      for (let i = 0; i < runs; i++) {
        const record = await create(i, 15400 + i);
        steps = [];
        began = performance.now();
        await supervisor.provision(record);
        ready.push(performance.now() - began);
        // The first run also builds the Postgres template cluster: its steps are shown apart.
        if (i > 0) for (const [step, at] of steps) stepRuns.set(step, [...(stepRuns.get(step) ?? []), at]);
        else console.log(`${kind} first run: ${steps.map(([step, at]) => `${step} ${at.toFixed(0)}`).join(', ')} ms`);
        await new Promise((r) => setTimeout(r, idleSeconds * 1000));
        const [server, forwarder, itsShim] = await costOf(record);
        pss.push(server);
        helper.push(forwarder);
        shim.push(itsShim);
        await supervisor.remove(record.id);
        await db.deleteFrom('addons').where('id', '=', record.id).execute();
      }
      // N of them idle at once: the pages their programs share (libraries, node's code) split N
      // ways, as on a machine that runs several; each one's own pages count whole.
      const together = [];
      for (let i = 0; i < runs; i++) {
        const record = await create(i, 15500 + i);
        await supervisor.provision(record);
        together.push(record);
      }
      await new Promise((r) => setTimeout(r, idleSeconds * 1000));
      const costs = await Promise.all(together.map(costOf));
      const perAddon = (k: number) => costs.reduce((sum, c) => sum + c[k]!, 0) / together.length;
      for (const record of together) {
        await supervisor.remove(record.id);
        await db.deleteFrom('addons').where('id', '=', record.id).execute();
      }
      const total = pss.map((p, i) => p + helper[i]! + shim[i]!);
      console.log(
        `${kind}: create → accepting connections median ${median(ready).toFixed(0)} ms (min ${Math.min(...ready).toFixed(0)}, max ${Math.max(...ready).toFixed(0)}); ` +
          `idle memory (PSS, after ${idleSeconds} s) medians: server ${mib(median(pss))} MiB, network helper ${mib(median(helper))} MiB, ` +
          `shim ${mib(median(shim))} MiB; all three ${mib(median(total))} MiB`,
      );
      console.log(
        `${kind}: ${runs} idle at once, per add-on (PSS): server ${mib(perAddon(0))} MiB, network helper ${mib(perAddon(1))} MiB, ` +
          `shim ${mib(perAddon(2))} MiB; all three ${mib(perAddon(0) + perAddon(1) + perAddon(2))} MiB`,
      );
      console.log(
        `${kind} where the time goes (median ms since the start, runs 2..${runs}): ` +
          [...stepRuns].map(([step, at]) => `${step} ${median(at).toFixed(0)}`).join(', '),
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
