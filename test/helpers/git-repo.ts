import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** A git repository in a temp dir, committed to with `commit(files)`; `remove()` deletes it. */
export class TestRepo {
  readonly dir: string;
  constructor(prefix = 'slipway-repo-', branch = 'main') {
    this.dir = mkdtempSync(join(tmpdir(), prefix));
    this.git('init', '-q', '-b', branch);
    this.git('config', 'user.email', 'test@example.com');
    this.git('config', 'user.name', 'Test');
  }

  git(...args: string[]): string {
    return execFileSync('git', args, { cwd: this.dir, encoding: 'utf8' }).trim();
  }

  /** Writes (or with null, deletes) files and commits them; returns the commit sha. */
  commit(files: Record<string, string | null>, message = 'change'): string {
    for (const [path, content] of Object.entries(files)) {
      const full = join(this.dir, path);
      if (content === null) rmSync(full, { force: true });
      else {
        mkdirSync(dirname(full), { recursive: true });
        writeFileSync(full, content);
      }
    }
    this.git('add', '-A');
    this.git('commit', '-q', '--allow-empty', '-m', message);
    return this.git('rev-parse', 'HEAD');
  }

  remove() {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
