/**
 * Administration from the command line (`npm run cli -- <command>`), against the same
 * database and keys as the server (DATA_DIR / DATABASE_URL / SECRET_KEY from the environment).
 *
 *   users create --username <u> --email <e> (--password <p> | --password-stdin) [--admin]
 *   users list
 *   api-keys create --user <username|email> --name <n> [--expires-in-days <d>]
 *   secrets rotate
 *   registry-key rotate
 *   backup <file> / restore <file> [--force]   (src/cli-backup.ts)
 */
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './config.js';
import { openPlatform, type Platform } from './platform/bootstrap.js';
import { AppError } from './platform/errors.js';
import { resealAll, RotationError } from './platform/crypto/rotation.js';
import { rotateSigningKey } from './platform/crypto/signing-key.js';
import { createIdentity } from './services.js';
import { BACKUP_USAGE, backupCommands } from './cli-backup.js';
import { BackupError } from './platform/backup/control-plane-backup.js';

const USAGE = `Usage: npm run cli -- <command>

  users create --username <name> --email <email> (--password <password> | --password-stdin) [--admin]
                      --password-stdin reads it from standard input, out of sight of ps and shell history
  users list
  api-keys create --user <username|email> --name <name> [--expires-in-days <days>]
  secrets rotate      re-seal every secret with SECRET_KEY (old keys in SECRET_KEY_PREVIOUS)
  registry-key rotate new registry token signing key; the old certificate stays in the served bundle
${BACKUP_USAGE}`;

class UsageError extends Error {}

type Flags = Record<string, string | boolean | undefined>;

function flags(args: string[], options: Options): Flags {
  const spec = Object.fromEntries(Object.entries(options).map(([k, v]) => [k, { type: v.type }]));
  try {
    return parseArgs({ args, options: spec, strict: true, allowPositionals: false }).values as Flags;
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

function required(values: Flags, name: string): string {
  const v = values[name];
  if (typeof v !== 'string' || v === '') throw new UsageError(`--${name} is required`);
  return v;
}

type Options = Record<string, { type: 'string' | 'boolean'; required?: boolean }>;

interface Command {
  options: Options;
  run(platform: Platform, f: Flags): Promise<void>;
}

const commands: Record<string, Command> = {
  'users create': {
    options: {
      username: { type: 'string', required: true },
      email: { type: 'string', required: true },
      password: { type: 'string' },
      'password-stdin': { type: 'boolean' },
      admin: { type: 'boolean' },
    },
    async run({ ctx }, f) {
      const password = f['password-stdin'] === true ? await readStdin() : required(f, 'password');
      const user = await createIdentity(ctx).users.create({
        username: required(f, 'username'),
        email: required(f, 'email'),
        password,
        is_admin: f.admin === true,
      });
      console.log(`created user ${user.username} <${user.email}>${user.is_admin ? ' (site admin)' : ''} id=${user.id}`);
    },
  },

  'users list': {
    options: {},
    async run({ ctx }) {
      const users = await createIdentity(ctx).users.list();
      for (const u of users) console.log([u.id, u.username, u.email, u.is_admin ? 'admin' : '-', u.created].join('\t'));
      if (users.length === 0) console.error('no users');
    },
  },

  'api-keys create': {
    options: { user: { type: 'string', required: true }, name: { type: 'string', required: true }, 'expires-in-days': { type: 'string' } },
    async run({ ctx }, f) {
      const who = required(f, 'user');
      const { users, auth } = createIdentity(ctx);
      const user = await users.findByUsernameOrEmail(who);
      if (!user) throw new AppError('NOT_FOUND', `No user with username or email '${who}'`);
      const days = f['expires-in-days'] === undefined ? undefined : Number(f['expires-in-days']);
      const key = await auth.createApiKey(user.id, required(f, 'name'), days);
      console.error(
        `API key '${key.name}' for ${user.username} (id ${key.id}${key.expires ? `, expires ${key.expires}` : ''}); it is shown only this once:`,
      );
      console.log(key.key);
    },
  },

  'registry-key rotate': {
    options: {},
    async run({ ctx }) {
      const { kid, retiredKid } = await rotateSigningKey(ctx.config);
      console.log(
        `registry signing key rotated: new kid ${kid}${retiredKid ? `, previous ${retiredKid} kept in the certificate bundle` : ''}`,
      );
    },
  },

  'secrets rotate': {
    options: {},
    async run({ ctx }) {
      for (const r of await resealAll(ctx.db, ctx.secrets)) {
        console.log(`${r.table}.${r.column}: re-sealed ${r.resealed} of ${r.total}`);
      }
    },
  },
};

/** Standard input without its final newline (a password piped in with `echo` or `printf`). */
async function readStdin(): Promise<string> {
  let text = '';
  for await (const chunk of process.stdin) text += chunk;
  return text.replace(/\r?\n$/, '');
}

/** Checks what can be checked without the database, so usage errors answer at once. */
function checkFlags(options: Options, f: Flags) {
  for (const [flag, spec] of Object.entries(options)) if (spec.required) required(f, flag);
  if ('password-stdin' in options && f['password-stdin'] !== true) required(f, 'password');
  const days = f['expires-in-days'];
  if (days !== undefined && !/^[1-9]\d*$/.test(String(days))) throw new UsageError('--expires-in-days must be a positive integer');
}

async function main(argv: string[]): Promise<number> {
  const archiving = backupCommands[argv[0] ?? ''];
  if (archiving) {
    const [file, ...rest] = argv.slice(1);
    if (!file || file.startsWith('-')) throw new UsageError(`${argv[0]} needs the archive's file name`);
    const f = flags(rest, archiving.options);
    const config = loadConfig();
    if (!archiving.opensPlatform) {
      await archiving.run(config, file, f);
      return 0;
    }
    const platform = await openPlatform(config, () => {}, { pipeline: false });
    try {
      await archiving.run(config, file, f);
      return 0;
    } finally {
      await platform.close();
    }
  }
  const name = argv.slice(0, 2).join(' ');
  const command = commands[name];
  if (!command) {
    process.stderr.write(
      argv.length === 0 || argv[0] === 'help' || argv[0] === '--help' ? USAGE : `Unknown command '${argv.join(' ')}'\n\n${USAGE}`,
    );
    return argv.length === 0 || argv[0] === 'help' || argv[0] === '--help' ? 0 : 2;
  }
  const f = flags(argv.slice(2), command.options);
  checkFlags(command.options, f);
  const platform = await openPlatform(loadConfig(), () => {}, { pipeline: false });
  try {
    await command.run(platform, f);
    return 0;
  } finally {
    await platform.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    if (err instanceof UsageError) process.stderr.write(`${err.message}\n\n${USAGE}`);
    else if (err instanceof AppError || err instanceof ConfigError || err instanceof RotationError || err instanceof BackupError)
      process.stderr.write(`error: ${err.message}\n`);
    else process.stderr.write(`error: ${(err as Error)?.stack ?? err}\n`);
    process.exit(err instanceof UsageError ? 2 : 1);
  },
);
