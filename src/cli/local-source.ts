import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AppDetail } from './context.js';
import { CliError } from './errors.js';

/** Where `deploy --include-uncommitted` leaves the commit it made of the working tree (the build fetches it by name). */
export const UNCOMMITTED_REF = 'refs/slipway/uncommitted';

function git(dir: string, args: string[], env: Record<string, string> = {}) {
  const r = spawnSync('git', ['-C', dir, ...args], { encoding: 'utf8', env: { ...process.env, ...env }, maxBuffer: 16 * 1024 * 1024 });
  return { code: r.status ?? 1, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
}

/** The application's repository when it is a directory of this machine (a local path or file:// address). */
export function localRepositoryDir(app: Pick<AppDetail, 'github_repository'>): string | null {
  const repository = app.github_repository?.trim();
  if (!repository) return null;
  const path = repository.startsWith('file://') ? fileURLToPath(repository) : repository;
  return isAbsolute(path) && existsSync(path) ? path : null;
}

/**
 * Before a deploy of an application built from a directory of this machine: a directory that is
 * no git repository is refused with what to run; changes not committed are said (the build takes
 * commits only) or, with `includeUncommitted`, committed aside (never touching the branch, the
 * index or the files) under UNCOMMITTED_REF, which is then the ref to deploy.
 */
export function checkLocalSource(
  app: Pick<AppDetail, 'github_repository' | 'auto_deploy_branch'>,
  options: { includeUncommitted?: boolean; warn: (text: string) => void },
): { ref?: string } {
  const dir = localRepositoryDir(app);
  if (!dir) return {};
  if (git(dir, ['rev-parse', '--git-dir']).code !== 0)
    throw new CliError(
      `${dir} is not a git repository, and a deploy builds a commit of one. Make it one:\n` +
        `  git -C ${dir} init -b main && git -C ${dir} add -A && git -C ${dir} commit -m "First deploy"\n` +
        `then run slipway deploy again.`,
    );
  const changes = git(dir, ['status', '--porcelain', '--untracked-files=normal'])
    .stdout.split('\n')
    .filter((l) => l.trim() !== '');
  if (changes.length === 0) return {};
  if (!options.includeUncommitted) {
    const shown = changes.slice(0, 5).map((l) => `    ${l}`);
    if (changes.length > 5) shown.push(`    … and ${changes.length - 5} more`);
    options.warn(
      `warning: ${changes.length} change${changes.length === 1 ? '' : 's'} in ${dir} ${changes.length === 1 ? 'is' : 'are'} not committed and will not be deployed ` +
        `(the build takes the last commit of ${app.auto_deploy_branch ?? 'the branch'}):\n${shown.join('\n')}\n` +
        `  Commit them (git add -A && git commit -m "…") or deploy them as they are: slipway deploy --include-uncommitted\n`,
    );
    return {};
  }
  return { ref: commitWorkingTree(dir) };
}

/** A commit of the working tree as it is (tracked and untracked files, .gitignore respected) on top of HEAD, under UNCOMMITTED_REF. */
function commitWorkingTree(dir: string): string {
  const scratch = mkdtempSync(join(tmpdir(), 'slipway-index-'));
  // A separate index: the user's staged changes stay as they were.
  const env = {
    GIT_INDEX_FILE: join(scratch, 'index'),
    GIT_AUTHOR_NAME: process.env.GIT_AUTHOR_NAME ?? 'slipway',
    GIT_AUTHOR_EMAIL: process.env.GIT_AUTHOR_EMAIL ?? 'slipway@localhost',
    GIT_COMMITTER_NAME: process.env.GIT_COMMITTER_NAME ?? 'slipway',
    GIT_COMMITTER_EMAIL: process.env.GIT_COMMITTER_EMAIL ?? 'slipway@localhost',
  };
  try {
    const head = git(dir, ['rev-parse', '--verify', '--quiet', 'HEAD']).stdout.trim();
    const steps: string[][] = [...(head ? [['read-tree', 'HEAD']] : []), ['add', '-A']];
    for (const args of steps) {
      const r = git(dir, args, env);
      if (r.code !== 0) throw new CliError(`Could not take the uncommitted changes of ${dir}: git ${args[0]}: ${r.stderr.trim()}`);
    }
    const tree = git(dir, ['write-tree'], env);
    if (tree.code !== 0) throw new CliError(`Could not take the uncommitted changes of ${dir}: ${tree.stderr.trim()}`);
    const commit = git(
      dir,
      ['commit-tree', tree.stdout.trim(), ...(head ? ['-p', head] : []), '-m', 'slipway deploy --include-uncommitted'],
      env,
    );
    if (commit.code !== 0) throw new CliError(`Could not take the uncommitted changes of ${dir}: ${commit.stderr.trim()}`);
    const updated = git(dir, ['update-ref', UNCOMMITTED_REF, commit.stdout.trim()]);
    if (updated.code !== 0) throw new CliError(`Could not take the uncommitted changes of ${dir}: ${updated.stderr.trim()}`);
    return UNCOMMITTED_REF;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
