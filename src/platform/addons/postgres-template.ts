import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { chown, lchown, lstat, mkdir, readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { privateDir } from '../fs/private-dir.js';
import { makeReachable } from '../fs/search-bits.js';
import { run } from '../git/command.js';
import { asSandboxUser } from '../sandbox/index.js';
import { postgresBinDir, quote } from './servers.js';

const exec = promisify(execFile);

/** Runs initdb for the template: a user that owns nothing of the platform's nor any tenant's (initdb refuses root). */
const TEMPLATE_BUILDER = 65534;

/**
 * An empty Postgres cluster made once per server binary version (initdb takes most of a new
 * add-on's creation: about a second on an idle machine, several on a loaded one), which each new
 * add-on copies instead of running initdb. Kept root-owned under the add-ons' directory, where
 * no sandbox sees it; the copy is made by the platform into a directory it has just created for
 * the add-on (no tenant has ever had it), then given to the add-on's user, whose sandbox sets its
 * own superuser password before the server first starts (see `postgresAdoptTemplateCommand`).
 * Every add-on copied from one template shares its system identifier: harmless, since each
 * add-on's WAL and base backups live under its own id, never mixed with another's.
 */
export class PostgresTemplates {
  private building: Promise<string> | null = null;

  constructor(
    private readonly dir: string,
    /** Its superuser (the platform's, named alike in every add-on). */
    readonly adminUser: string,
  ) {}

  /** The template's data directory, made the first time it is asked for (concurrent callers share one build). */
  path(): Promise<string> {
    this.building ??= this.build().catch((err: unknown) => {
      this.building = null;
      throw err;
    });
    return this.building;
  }

  /** Copies the template to `target` (which must not exist), owned by root until the add-on's sandbox takes it. */
  async copyTo(target: string): Promise<void> {
    const template = await this.path();
    await exec('cp', ['-a', '--no-dereference', template, target]);
  }

  private async build(): Promise<string> {
    const bin = postgresBinDir();
    if (!bin) throw new Error('PostgreSQL server binaries are not installed (Debian package postgresql)');
    const { stdout } = await exec(join(bin, 'postgres'), ['-V']);
    const key = `pg-${createHash('sha256').update(`${bin}\n${stdout}\n${this.adminUser}`).digest('hex').slice(0, 16)}`;
    const final = join(this.dir, key);
    if (await isTemplate(final)) return final;
    await privateDir(this.dir, 0o711);
    // Templates of binaries no longer installed, and builds a killed platform left.
    for (const entry of await readdir(this.dir)) if (entry !== key) await rm(join(this.dir, entry), { recursive: true, force: true });
    const building = join(this.dir, `.build-${randomBytes(6).toString('hex')}`);
    await mkdir(building, { mode: 0o700 });
    await chown(building, TEMPLATE_BUILDER, TEMPLATE_BUILDER);
    await makeReachable(building);
    try {
      // Its superuser's password is a random one nobody keeps: each add-on sets its own before its first start.
      const [setpriv, ...dropPrivileges] = asSandboxUser(TEMPLATE_BUILDER);
      const result = await run(
        setpriv!,
        [
          ...dropPrivileges,
          '/bin/sh',
          '-c',
          [
            'umask 077',
            `printf '%s\\n' "$TEMPLATE_PASSWORD" > pwfile`,
            `${quote(join(bin, 'initdb'))} -D data -U ${quote(this.adminUser)} --pwfile=pwfile --auth=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 -N >/dev/null; status=$?`,
            'rm -f pwfile',
            'exit $status',
          ].join('\n'),
        ],
        {
          cwd: building,
          env: { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8', TEMPLATE_PASSWORD: randomBytes(32).toString('base64url') },
          timeoutMs: 120_000,
        },
      );
      if (result.code !== 0) throw new Error(`initdb failed: ${result.stderr.trim().split('\n').pop() ?? `exit code ${result.code}`}`);
      // initdb makes no links; one here means something else wrote the directory: never copied from.
      await chownTree(join(building, 'data'));
      await rename(join(building, 'data'), final).catch(async (err: NodeJS.ErrnoException) => {
        // Another platform process finished the same template first.
        if (!(await isTemplate(final))) throw err;
      });
      return final;
    } finally {
      await rm(building, { recursive: true, force: true });
    }
  }
}

async function isTemplate(dir: string): Promise<boolean> {
  const info = await lstat(join(dir, 'PG_VERSION')).catch(() => null);
  return info?.isFile() === true;
}

/** Gives the tree to root, refusing anything but plain files and directories (no link is followed or copied). */
async function chownTree(dir: string): Promise<void> {
  const info = await lstat(dir);
  if (!info.isDirectory()) throw new Error(`the Postgres template ${dir} is not a directory`);
  // lchown: a file swapped for a link after the listing gives root the link, never what it points to.
  await lchown(dir, 0, 0);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) await chownTree(path);
    else if (entry.isFile()) await lchown(path, 0, 0);
    else throw new Error(`the Postgres template holds ${path}, neither a file nor a directory`);
  }
}

/**
 * Run in the add-on's sandbox as its user, once, on its copy of the template: sets the platform
 * superuser's password (from the environment, never on a command line) in single-user mode, so
 * the server never accepts a connection with the template's.
 */
export function postgresAdoptTemplateCommand(dir: string, adminUser: string, sharedBuffersMiB: number): string {
  const bin = postgresBinDir()!;
  return [
    'umask 077',
    // The password is URL-safe base64 (newPassword): nothing in it needs quoting in SQL.
    `case "$ADDON_ADMIN_PASSWORD" in *[!A-Za-z0-9_-]*|'') echo 'unexpected password characters' >&2; exit 2;; esac`,
    `out=$(printf 'ALTER ROLE %s PASSWORD %s\\n' ${quote(`"${adminUser}"`)} "'$ADDON_ADMIN_PASSWORD'" | ` +
      `${quote(join(bin, 'postgres'))} --single -D ${quote(join(dir, 'data'))} -c dynamic_shared_memory_type=mmap ` +
      `-c shared_buffers=${sharedBuffersMiB}MB -c log_min_error_statement=panic postgres 2>&1 >/dev/null); status=$?`,
    // Single-user mode reports a failed statement on stderr (never the statement itself: see
    // log_min_error_statement, it holds the password) and still exits 0.
    `if [ $status -ne 0 ] || printf '%s' "$out" | grep -q -E 'ERROR|FATAL|PANIC'; then printf '%s\\n' "$out" | tail -n 3 >&2; exit 1; fi`,
  ].join('\n');
}
