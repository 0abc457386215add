import { access, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { privateDir } from '../fs/private-dir.js';
import { run } from './command.js';

/** Where the platform keeps the applications' pushed repositories (only the platform reads or writes it). */
export const pushRepositoriesRoot = (dataDir: string) => join(dataDir, 'git');
/** The bare repository `git push` writes an application's commits into. */
export const pushRepositoryDir = (dataDir: string, applicationId: string) => join(pushRepositoriesRoot(dataDir), `${applicationId}.git`);

/** git as the platform runs it on its own repositories: no system or user configuration, no prompts. */
export const PLATFORM_GIT_ENV: NodeJS.ProcessEnv = {
  PATH: process.env.PATH,
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_TERMINAL_PROMPT: '0',
  HOME: '/nonexistent',
  LANG: 'C',
};

export interface PushRepositoryRules {
  allowForcePush: boolean;
  /** Most bytes of pack data one push may send (git's receive.maxInputSize). */
  maxInputBytes: number;
}

/**
 * The repository's whole configuration, written by the platform on every push (nothing a
 * tenant sends can change it). Pushed objects are hostile: each is checked (fsck) before
 * it is stored, and no hook ever runs.
 */
function configText(rules: PushRepositoryRules): string {
  return [
    '[core]',
    '\trepositoryformatversion = 0',
    '\tfilemode = true',
    '\tbare = true',
    '\thooksPath = /dev/null',
    '[receive]',
    '\tfsckObjects = true',
    `\tdenyNonFastForwards = ${!rules.allowForcePush}`,
    // Deleting a branch and pushing it again would be a force push by two steps.
    `\tdenyDeletes = ${!rules.allowForcePush}`,
    `\tmaxInputSize = ${rules.maxInputBytes}`,
    '\tadvertisePushOptions = false',
    '\tshallowUpdate = false',
    '[transfer]',
    '\tfsckObjects = true',
    '[uploadpack]',
    // Builds fetch the pushed commit by its id.
    '\tallowAnySHA1InWant = true',
    '[http]',
    '\treceivepack = true',
    '\tuploadpack = false',
    '[gc]',
    '\tauto = 0',
    '',
  ].join('\n');
}

/** Creates the application's repository when missing and (re)writes its configuration. */
export async function preparePushRepository(dataDir: string, applicationId: string, rules: PushRepositoryRules): Promise<string> {
  await privateDir(pushRepositoriesRoot(dataDir), 0o700);
  const dir = pushRepositoryDir(dataDir, applicationId);
  const exists = await access(join(dir, 'HEAD')).then(
    () => true,
    () => false,
  );
  if (!exists) {
    const init = await run('git', ['init', '--bare', '-q', '--template=', '-b', 'main', dir], { env: PLATFORM_GIT_ENV, timeoutMs: 30_000 });
    if (init.code !== 0) throw new Error(`git init of the push repository failed: ${init.stderr.trim()}`);
  }
  await writeFile(join(dir, 'config'), configText(rules), { mode: 0o600 });
  return dir;
}

/** Moves a branch back to where it was before a push (or removes it when the push created it). */
export async function restoreRef(dir: string, ref: string, previous: string, pushed: string): Promise<void> {
  const args = /^0{40}$/.test(previous) ? ['update-ref', '-d', ref, pushed] : ['update-ref', ref, previous, pushed];
  const restored = await run('git', ['--git-dir', dir, ...args], { env: PLATFORM_GIT_ENV, timeoutMs: 30_000 });
  if (restored.code !== 0) throw new Error(`restoring ${ref} failed: ${restored.stderr.trim()}`);
}
