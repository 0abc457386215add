import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { ok } from '../api.js';
import { Context } from '../context.js';
import { usage } from '../errors.js';
import { when } from '../output.js';

/** `slipway ssh-keys`: your SSH public keys, which `git push` over the server's SSH gateway authenticates. */
export function sshKeyCommands(program: Command) {
  const keys = program.command('ssh-keys').description('Your SSH public keys (git push over SSH)');

  keys
    .command('add')
    .description('Register a public key (a .pub file)')
    .argument('<file>', 'the public key file, e.g. ~/.ssh/id_ed25519.pub')
    .option('--name <name>', "what the key is (default: the key's comment)")
    .action(async (file: string, opts: { name?: string }, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      if (!file.endsWith('.pub')) throw usage(`${file}: give the public key (the .pub file), never the private one`);
      const text = await readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
        throw usage(`${file}: ${err.code === 'ENOENT' ? 'no such file' : err.message}`);
      });
      const key = await ok(
        ctx.api.POST('/v1/users/me/ssh-keys', { body: { public_key: text, ...(opts.name ? { name: opts.name } : {}) } }),
      );
      ctx.out.result(key, () => `Added SSH key “${key.name}” ${key.fingerprint} (${key.id})`);
    });

  keys
    .command('list')
    .description('Your SSH keys with their fingerprints and last use')
    .action(async (_opts, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      const list = await ok(ctx.api.GET('/v1/users/me/ssh-keys'));
      ctx.out.table(
        list,
        [
          { header: 'ID', value: (k) => k.id },
          { header: 'NAME', value: (k) => k.name },
          { header: 'FINGERPRINT', value: (k) => k.fingerprint },
          { header: 'LAST USED', value: (k) => (k.last_used_at ? when(k.last_used_at) : 'never') },
        ],
        'no SSH keys',
      );
    });

  keys
    .command('remove')
    .description('Remove a key: pushes with it are refused at once')
    .argument('<id>')
    .action(async (id: string, _opts, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      await ok(ctx.api.DELETE('/v1/users/me/ssh-keys/{key_id}', { params: { path: { key_id: id } } }));
      ctx.out.result({ removed: id }, () => `Removed SSH key ${id}`);
    });
}
