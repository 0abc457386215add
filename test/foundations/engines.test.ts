/** Node 20 is supported: scripts/check-engines.mjs (also run by .ci/run) fails on a package whose engines.node excludes it. */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const SCRIPT = resolve(import.meta.dirname, '../../scripts/check-engines.mjs');

describe('scripts/check-engines.mjs', () => {
  it('passes on the installed packages', () => {
    expect(execFileSync(process.execPath, [SCRIPT], { cwd: resolve(import.meta.dirname, '../..'), encoding: 'utf8' })).toMatch(
      /every installed package supports Node v\d+/,
    );
  });

  it('names a package, nested or scoped, whose engines.node excludes the running Node', () => {
    const root = mkdtempSync(join(tmpdir(), 'slipway-engines-'));
    try {
      const write = (dir: string, manifest: object) => {
        mkdirSync(join(root, dir), { recursive: true });
        writeFileSync(join(root, dir, 'package.json'), JSON.stringify(manifest));
      };
      write('fine', { name: 'fine', version: '1.0.0', engines: { node: '>=18' } });
      write('@scope/parent', { name: '@scope/parent', version: '2.0.0' });
      write('@scope/parent/node_modules/too-new', { name: 'too-new', version: '3.0.0', engines: { node: '>=99' } });
      const run = spawnSync(process.execPath, [SCRIPT, root], { encoding: 'utf8' });
      expect(run.status).toBe(1);
      expect(run.stderr).toContain('@scope/parent/node_modules/too-new@3.0.0: engines.node ">=99"');
      expect(run.stderr).not.toContain('fine@');
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
