/** docs/configuration.md is generated from src/config.ts: a setting added or changed without regenerating it fails here. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EnvSchema, loadConfig } from '../../src/config.js';
import { CONFIG_DOCS_FILE, CONFIG_SOURCE_FILE, REGENERATE, renderConfigDocs, settingComments } from '../../scripts/config-docs.js';

describe('docs/configuration.md', () => {
  it(`is current with src/config.ts (run \`${REGENERATE}\` after changing a setting)`, () => {
    const generated = renderConfigDocs();
    expect(readFileSync(CONFIG_DOCS_FILE, 'utf8') === generated, `docs/configuration.md is out of date: run \`${REGENERATE}\``).toBe(true);
  });

  it('documents every setting the server reads, each with a meaning and its real default', () => {
    const comments = settingComments();
    expect([...comments.keys()]).toEqual(Object.keys(EnvSchema.properties));
    expect([...comments].filter(([, text]) => text === '').map(([name]) => name)).toEqual([]);
    // The defaults the table shows are the ones loadConfig applies to an empty environment.
    const defaults = loadConfig({});
    const rows = new Map(
      renderConfigDocs()
        .split('\n')
        .filter((line) => line.startsWith('| `'))
        .map((line) => line.split(' | ').map((cell) => cell.replace(/^\| /, '')) as [string, string]),
    );
    expect(rows.get('`PORT`')).toBe(`\`${defaults.PORT}\``);
    expect(rows.get('`RUNTIME_ISOLATION`')).toBe(`\`${defaults.RUNTIME_ISOLATION}\``);
    expect(rows.get('`DATABASE_URL`')).toBe('unset');
  });

  it('refuses to document a setting that has no comment, naming it', () => {
    const source = readFileSync(CONFIG_SOURCE_FILE, 'utf8');
    const stripped = source.replace(/\/\*\* Port the API[^\n]*\n/, '');
    expect(stripped).not.toBe(source);
    expect(() => renderConfigDocs(stripped)).toThrow(/give these settings a \/\*\* comment \*\/ saying what they do: PORT$/);
  });
});
