/** docs/ancla-compatibility.md is generated from the contract suite's call lists: a call added or changed without regenerating it fails here. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { TESTS as SERVICE_TESTS } from './calls/services.js';
import { ANCLA_TABLE_FILE, loadCalls, REGENERATE, renderAnclaTable } from '../../scripts/ancla-table.js';

describe('docs/ancla-compatibility.md', () => {
  it('is the table of the call lists in test/ancla-contract/calls', async () => {
    const families = await loadCalls();
    expect(families.length).toBeGreaterThan(0);
    const generated = renderAnclaTable(families);
    expect(readFileSync(ANCLA_TABLE_FILE, 'utf8') === generated, `docs/ancla-compatibility.md is out of date: run \`${REGENERATE}\``).toBe(
      true,
    );
  });

  it('names a covering test that exists for every served call', async () => {
    const titles = new Map<string, string>();
    for (const { calls, uncalled } of await loadCalls())
      for (const call of [...calls.filter((c) => c.test), ...uncalled.map((u) => ({ ...u, client: 'none' }))]) {
        const [file, title] = call.test.split(' > ') as [string, string];
        const source = titles.get(file) ?? readFileSync(new URL(file, import.meta.url), 'utf8');
        titles.set(file, source);
        // services.test.ts names its cases through the TESTS table of its calls file.
        const key = Object.entries(SERVICE_TESTS).find(([, t]) => t === title)?.[0];
        const declared = source.includes(`it('${title}'`) || (key !== undefined && new RegExp(`it\\(\\s*TESTS\\.${key},`).test(source));
        expect(declared, `${call.client} ${call.method} ${call.path}: ${call.test}`).toBe(true);
      }
  });
});
