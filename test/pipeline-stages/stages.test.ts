import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIFECYCLES, STAGES } from '../../src/pipeline/stages.js';
import { freshDatabase } from '../helpers/harness.js';
import { statusWrites, tableWrites } from './status-writes.js';
import { ARCHITECTURE_FILE, pipelineDiagram, withDiagram } from '../../scripts/pipeline-diagram.js';

const PIPELINE_ROOT = fileURLToPath(new URL('../../src/pipeline/', import.meta.url));
const SOURCE_ROOT = fileURLToPath(new URL('../../src/', import.meta.url));
const writes = statusWrites(PIPELINE_ROOT);
const key = (at: string, state: string) => `${at} → ${state}`;

describe('the stage table and the code agree', () => {
  it('finds the status writes it checks (the scan is not blind)', () => {
    expect(writes.length).toBeGreaterThan(20);
    expect(writes.map((w) => w.at)).toContain('deploy/deploy-runner.ts#DeployRunner.run');
  });

  it('every status the pipeline writes is a transition of the table, written where the table says', () => {
    const known = new Set(LIFECYCLES.flatMap((l) => l.transitions.map((t) => key(t.writtenIn, t.to))));
    const unlisted = writes.filter((w) => !known.has(key(w.at, w.state))).map((w) => `${key(w.at, w.state)} (line ${w.line})`);
    expect(unlisted).toEqual([]);
  });

  it('every transition of the table is written where it says (or is the column default)', () => {
    const written = new Set(writes.map((w) => key(w.at, w.state)));
    const stale = LIFECYCLES.flatMap((l) =>
      l.transitions
        .filter((t) => !t.columnDefault && !written.has(key(t.writtenIn, t.to)))
        .map((t) => `${l.record}: ${key(t.writtenIn, t.to)}`),
    );
    expect(stale).toEqual([]);
  });

  it('each lifecycle is a state machine over its own states, with a way in and a recovery for every state in progress', () => {
    for (const l of LIFECYCLES) {
      const states = new Set(l.states);
      for (const t of l.transitions) {
        expect(states, `${l.record}: ${t.from.join('|')} → ${t.to}`).toContain(t.to);
        for (const from of t.from) expect(states, `${l.record}: ${from} → ${t.to}`).toContain(from);
      }
      const entered = new Set(l.transitions.map((t) => t.to));
      expect(
        l.states.filter((s) => !entered.has(s)),
        `${l.record}: states nothing moves a record into`,
      ).toEqual([]);
      expect(
        l.transitions.some((t) => t.from.length === 0),
        `${l.record} is created somewhere`,
      ).toBe(true);
      // A state in progress is left by some transition, and says what settles it on a crash.
      for (const busy of l.inProgress) {
        expect(
          l.transitions.some((t) => t.from.includes(busy)),
          `${l.record}: ${busy} is never left`,
        ).toBe(true);
        expect(l.onCrash[busy], `${l.record}: ${busy} on crash`).toMatch(/\w/);
      }
      // A settled state has no crash story: no job is working on it.
      expect(Object.keys(l.onCrash).sort()).toEqual([...l.inProgress].sort());
    }
  });

  it("only the pipeline writes its records' tables (so the scan above sees every status written)", () => {
    const tables = new Set(LIFECYCLES.flatMap((l) => (l.table ? [l.table] : [])));
    expect(tableWrites(PIPELINE_ROOT, tables).length).toBeGreaterThan(5);
    const outside = tableWrites(SOURCE_ROOT, tables).filter((w) => !w.startsWith('pipeline/'));
    expect(outside).toEqual([]);
  });

  it('names the stages in order, each with its job kind and its folder', () => {
    expect(STAGES.map((s) => s.stage)).toEqual(['build', 'release', 'deploy', 'serve']);
    expect(new Set(STAGES.map((s) => s.job)).size).toBe(STAGES.length);
  });
});

describe('the stage table and the database agree', () => {
  let client: pg.Client;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    const database = await freshDatabase();
    drop = database.drop;
    client = new pg.Client({ connectionString: database.url });
    await client.connect();
  });

  afterAll(async () => {
    await client?.end();
    await drop?.();
  });

  /** The values a table's CHECK constraints allow its `status` column (`status IN (...)`, as PostgreSQL stores it). */
  async function allowedStatuses(table: string): Promise<string[]> {
    const { rows } = await client.query<{ def: string }>(
      `SELECT pg_get_constraintdef(c.oid) AS def FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid
        WHERE t.relname = $1 AND c.contype = 'c'`,
      [table],
    );
    const defs = rows.map((r) => r.def).filter((d) => /\(status\b/.test(d));
    expect(defs, `${table} has one CHECK on status`).toHaveLength(1);
    return [...defs[0]!.matchAll(/'([^']+)'::text/g)].map((m) => m[1]!);
  }

  async function statusDefault(table: string): Promise<string | null> {
    const { rows } = await client.query<{ column_default: string | null }>(
      `SELECT column_default FROM information_schema.columns WHERE table_name = $1 AND column_name = 'status'`,
      [table],
    );
    return /^'([^']+)'/.exec(rows[0]?.column_default ?? '')?.[1] ?? null;
  }

  it("each stored record's states are exactly those its table's CHECK constraint allows", async () => {
    for (const l of LIFECYCLES) {
      if (!l.table) continue;
      expect((await allowedStatuses(l.table)).sort(), l.table).toEqual([...l.states].sort());
    }
  });

  it('a record created without naming its status starts in the state the table says', async () => {
    for (const l of LIFECYCLES) {
      for (const t of l.transitions.filter((t) => t.columnDefault)) {
        expect(l.table, `${l.record} is stored`).not.toBeNull();
        expect(await statusDefault(l.table!), `${l.table} default`).toBe(t.to);
      }
    }
  });
});

describe('docs/architecture.md', () => {
  it('draws the stage file as it is now (run `npx tsx scripts/pipeline-diagram.ts` after changing it)', () => {
    const page = readFileSync(ARCHITECTURE_FILE, 'utf8');
    expect(withDiagram(page, pipelineDiagram())).toBe(page);
  });
});
