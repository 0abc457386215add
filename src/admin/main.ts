/**
 * `npm run admin -- <command>`: administration from the server's machine, against the
 * same database and keys as the server (DATA_DIR / DATABASE_URL / SECRET_KEY from the environment).
 * The `slipway` command (src/cli/) is the other tool: it talks to the REST API only, from anywhere.
 *
 *   users create --username <u> --email <e> (--password <p> | --password-stdin) [--admin]
 *   users list
 *   api-keys create --user <username|email> --name <n> [--expires-in-days <d>]
 *   secrets rotate
 *   registry-key rotate
 */
import { Command, CommanderError } from 'commander';
import { ConfigError, loadConfig } from '../config.js';
import { openPlatform, type Platform } from '../platform/bootstrap.js';
import { AppError } from '../platform/errors.js';
import { resealAll, RotationError } from '../platform/crypto/rotation.js';
import { rotateSigningKey } from '../platform/crypto/signing-key.js';
import { createIdentity } from '../services.js';

const USAGE = `Usage: npm run admin -- <command>

  users create --username <name> --email <email> (--password <password> | --password-stdin) [--admin]
                      --password-stdin reads it from standard input, out of sight of ps and shell history
  users list
  api-keys create --user <username|email> --name <name> [--expires-in-days <days>]
  secrets rotate      re-seal every secret with SECRET_KEY (old keys in SECRET_KEY_PREVIOUS)
  registry-key rotate new registry token signing key; the old certificate stays in the served bundle
`;

class UsageError extends Error {}

function required(value: string | undefined, flag: string): string {
  if (value === undefined || value === '') throw new UsageError(`--${flag} is required`);
  return value;
}

/** Opens the platform without its pipeline (usage was checked before: a usage error answers at once). */
async function withPlatform(run: (platform: Platform) => Promise<void>): Promise<void> {
  const platform = await openPlatform(loadConfig(), () => {}, { pipeline: false });
  try {
    await run(platform);
  } finally {
    await platform.close();
  }
}

function buildProgram(): Command {
  const program = new Command('admin')
    .exitOverride()
    // Commander's own messages become usage errors, reported below with the usage text; `--help` prints that text too.
    .configureOutput({ writeOut: () => {}, writeErr: () => {} })
    .helpCommand(false)
    .showSuggestionAfterError(false);

  const users = program.command('users');
  users
    .command('create')
    .option('--username <name>')
    .option('--email <email>')
    .option('--password <password>')
    .option('--password-stdin')
    .option('--admin')
    .action(async (f: { username?: string; email?: string; password?: string; passwordStdin?: boolean; admin?: boolean }) => {
      const username = required(f.username, 'username');
      const email = required(f.email, 'email');
      if (f.passwordStdin !== true) required(f.password, 'password');
      await withPlatform(async ({ ctx }) => {
        const password = f.passwordStdin === true ? await readStdin() : f.password!;
        const user = await createIdentity(ctx).users.create({ username, email, password, is_admin: f.admin === true });
        console.log(`created user ${user.username} <${user.email}>${user.is_admin ? ' (site admin)' : ''} id=${user.id}`);
      });
    });
  users.command('list').action(() =>
    withPlatform(async ({ ctx }) => {
      const list = await createIdentity(ctx).users.list();
      for (const u of list) console.log([u.id, u.username, u.email, u.is_admin ? 'admin' : '-', u.created].join('\t'));
      if (list.length === 0) console.error('no users');
    }),
  );

  program
    .command('api-keys')
    .command('create')
    .option('--user <username|email>')
    .option('--name <name>')
    .option('--expires-in-days <days>')
    .action(async (f: { user?: string; name?: string; expiresInDays?: string }) => {
      const who = required(f.user, 'user');
      const name = required(f.name, 'name');
      if (f.expiresInDays !== undefined && !/^[1-9]\d*$/.test(f.expiresInDays))
        throw new UsageError('--expires-in-days must be a positive integer');
      await withPlatform(async ({ ctx }) => {
        const { users: userService, auth } = createIdentity(ctx);
        const user = await userService.findByUsernameOrEmail(who);
        if (!user) throw new AppError('NOT_FOUND', `No user with username or email '${who}'`);
        const key = await auth.createApiKey(user.id, name, f.expiresInDays === undefined ? undefined : Number(f.expiresInDays));
        console.error(
          `API key '${key.name}' for ${user.username} (id ${key.id}${key.expires ? `, expires ${key.expires}` : ''}); it is shown only this once:`,
        );
        console.log(key.key);
      });
    });

  program
    .command('secrets')
    .command('rotate')
    .action(() =>
      withPlatform(async ({ ctx }) => {
        for (const r of await resealAll(ctx.db, ctx.secrets)) console.log(`${r.table}.${r.column}: re-sealed ${r.resealed} of ${r.total}`);
      }),
    );

  program
    .command('registry-key')
    .command('rotate')
    .action(() =>
      withPlatform(async ({ ctx }) => {
        const { kid, retiredKid } = await rotateSigningKey(ctx.config);
        console.log(
          `registry signing key rotated: new kid ${kid}${retiredKid ? `, previous ${retiredKid} kept in the certificate bundle` : ''}`,
        );
      }),
    );

  // Every command takes no arguments beyond its options: a stray word is a usage error, not ignored.
  const forbidExtras = (command: Command) => {
    command.allowExcessArguments(false);
    command.commands.forEach(forbidExtras);
  };
  forbidExtras(program);
  return program;
}

/** Standard input without its final newline (a password piped in with `echo` or `printf`). */
async function readStdin(): Promise<string> {
  let text = '';
  for await (const chunk of process.stdin) text += chunk;
  return text.replace(/\r?\n$/, '');
}

async function main(argv: string[]): Promise<number> {
  if (argv.length === 0 || argv[0] === 'help' || argv[0] === '--help') {
    process.stderr.write(USAGE);
    return 0;
  }
  try {
    await buildProgram().parseAsync(argv, { from: 'user' });
    return 0;
  } catch (err) {
    if (!(err instanceof CommanderError)) throw err;
    if (err.code === 'commander.helpDisplayed') {
      process.stderr.write(USAGE);
      return 0;
    }
    // A group without its command (`users`), or a command it does not have: the same answer as any unknown command.
    if (err.code === 'commander.unknownCommand' || err.code === 'commander.help')
      throw new UsageError(`Unknown command '${argv.join(' ')}'`);
    throw new UsageError(err.message.replace(/^error: /, ''));
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    if (err instanceof UsageError) process.stderr.write(`${err.message}\n\n${USAGE}`);
    else if (err instanceof AppError || err instanceof ConfigError || err instanceof RotationError)
      process.stderr.write(`error: ${err.message}\n`);
    else process.stderr.write(`error: ${(err as Error)?.stack ?? err}\n`);
    process.exit(err instanceof UsageError ? 2 : 1);
  },
);
