import { execFileSync } from 'node:child_process';

let answer: { missing: string | null } | undefined;

/** Why sandbox tests cannot run here (they need root and bubblewrap), or null. Asked once. */
export function sandboxMissing(): string | null {
  answer ??= { missing: probe() };
  return answer.missing;
}

function probe(): string | null {
  if (process.getuid?.() !== 0) return 'the sandbox tests need root (they start processes as other users)';
  try {
    execFileSync('bwrap', ['--version'], { stdio: 'ignore' });
    return null;
  } catch {
    return 'bubblewrap is not installed (apt-get install bubblewrap): sandbox tests skipped';
  }
}
