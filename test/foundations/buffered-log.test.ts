import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../src/platform/db/database.js';
import { BufferedLog } from '../../src/platform/logs/index.js';
import { freshDatabase } from '../helpers/harness.js';

// The one writer behind every record's log (images, releases, deployments, one-off runs), against
// a real PostgreSQL table: the same `log || $text` append the repositories use.
let db: Db;
let drop: () => Promise<void>;

beforeAll(async () => {
  const database = await freshDatabase();
  drop = database.drop;
  db = createDb(database.url, 2);
  await sql`create table log_probe (id int primary key, log_text text not null default '')`.execute(db);
});
afterAll(async () => {
  await db?.destroy();
  await drop?.();
});

async function probe(id: number) {
  await sql`insert into log_probe (id) values (${id})`.execute(db);
  const append = (text: string) => sql`update log_probe set log_text = log_text || ${text} where id = ${id}`.execute(db);
  const stored = async () =>
    (await sql<{ log_text: string }>`select log_text from log_probe where id = ${id}`.execute(db)).rows[0]!.log_text;
  return { append, stored };
}

describe('BufferedLog', () => {
  it('stores lines in the order they were written, across batches', async () => {
    const { append, stored } = await probe(1);
    const log = new BufferedLog({ append });
    for (let i = 0; i < 50; i++) {
      log.line(`line ${i}`);
      if (i % 7 === 0) void log.flush();
    }
    await log.flush();
    expect(await stored()).toBe(Array.from({ length: 50 }, (_, i) => `line ${i}\n`).join(''));
  });

  it('keeps the beginning of a log past its cap and says it was truncated', async () => {
    const { append, stored } = await probe(2);
    const log = new BufferedLog({ append, maxChars: 100 });
    for (let i = 0; i < 40; i++) log.line(`line ${String(i).padStart(2, '0')}`); // 8 characters each
    await log.flush();
    const text = await stored();
    expect(text).toBe(
      `${Array.from({ length: 12 }, (_, i) => `line ${String(i).padStart(2, '0')}\n`).join('')}[log truncated at 100 characters]\n`,
    );
    log.line('after the cap');
    await log.flush();
    expect(await stored()).toBe(text);
  });

  it('keeps the lines of a failed write, logs the failure and stores them, in order, with the next write', async () => {
    const { append, stored } = await probe(3);
    const warnings: Array<{ obj: object; msg?: string }> = [];
    const log = new BufferedLog({ append, logger: { warn: (obj, msg) => warnings.push({ obj, msg }) }, label: 'probe 3' });
    // Every update of the table fails while this constraint is there (NOT VALID still checks new rows).
    await sql`alter table log_probe add constraint refuse_writes check (id < 0) not valid`.execute(db);
    log.line('first');
    log.line('second');
    await log.flush();
    expect(await stored()).toBe('');
    expect(log.buffered).toBe('first\nsecond\n');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.msg).toMatch(/log write failed/);
    expect(warnings[0]!.obj).toMatchObject({ log: 'probe 3', attempt: 1 });

    await sql`alter table log_probe drop constraint refuse_writes`.execute(db);
    log.line('third');
    await log.flush();
    expect(await stored()).toBe('first\nsecond\nthird\n');
    expect(log.buffered).toBe('');
  });
});
