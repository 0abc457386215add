import { execFileSync } from 'node:child_process';
import type { Command } from 'commander';
import { Context } from '../context.js';
import { CliError } from '../errors.js';

/** The application's git remote on the server (`git push` deploys): the server's address and `/git/<id>.git`. */
export function remoteUrl(server: string, applicationId: string): string {
  return `${server.replace(/\/+$/, '')}/git/${applicationId}.git`;
}

/** `slipway git:remote`: prints the remote, and with --add makes it a remote of the repository here. */
export function gitCommands(program: Command) {
  program
    .command('git:remote')
    .description("The application's git remote: `git push slipway main` builds and deploys (password: an API key)")
    .option('--add [name]', 'add it as a remote of the git repository in this directory (default name: slipway)')
    .action(async (opts: { add?: string | boolean }, command: Command) => {
      const ctx = Context.of(command);
      const app = await ctx.app();
      const url = remoteUrl(ctx.settings.server, app.id);
      let added: string | null = null;
      if (opts.add) {
        added = typeof opts.add === 'string' ? opts.add : 'slipway';
        if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(added)) throw new CliError(`'${added}' is not a usable remote name`);
        const existing = gitRemotes(ctx.cwd);
        execFileSync('git', ['remote', existing.includes(added) ? 'set-url' : 'add', added, url], { cwd: ctx.cwd, stdio: 'ignore' });
      }
      ctx.out.result({ url, remote: added }, () => [
        url,
        ...(added ? [`Added as remote '${added}': git push ${added} main`] : []),
        'git asks for a password: give an API key (any user name).',
      ]);
    });
}

function gitRemotes(cwd: string): string[] {
  try {
    return execFileSync('git', ['remote'], { cwd, encoding: 'utf8' }).split('\n').filter(Boolean);
  } catch {
    throw new CliError('This directory is not a git repository: run `git init` first, or leave out --add');
  }
}
