import { readTextBeneath, UnsafePathError } from '../fs/beneath.js';
import { BuildError, type BuildInput } from './port.js';

/** passwd and group files are read by the platform (as root): bounded. */
const MAX_ACCOUNT_FILE_BYTES = 4 * 1024 * 1024;

/**
 * The image's USER as `uid:gid`, names resolved through the image's own /etc/passwd
 * (and /etc/group), so processes run as the user the image asks for; null means root.
 * The root file system is the image's (tenant-written): the files are read without
 * following a symlink at any component (an `/etc/passwd` linked to a host file is refused).
 */
export async function numericUser(rootfs: string, user: string | undefined, input: Pick<BuildInput, 'log'>): Promise<string | null> {
  if (!user || user === 'root' || user === '0') return null;
  const [name, group] = user.split(':') as [string, string | undefined];
  const lookup = async (file: string, key: string): Promise<string[] | null> => {
    let text: string;
    try {
      text = (await readTextBeneath(rootfs, `etc/${file}`, MAX_ACCOUNT_FILE_BYTES)) ?? '';
    } catch (err) {
      if (!(err instanceof UnsafePathError)) throw err;
      throw new BuildError(`USER ${user}: the image's /${err.message}; use a numeric USER (uid:gid) or a regular /etc/${file}`);
    }
    return (
      text
        .split('\n')
        .map((l) => l.split(':'))
        .find((f) => f[0] === key) ?? null
    );
  };
  let uid = name;
  let gid = group;
  if (!/^\d+$/.test(name)) {
    const entry = await lookup('passwd', name);
    if (!entry) throw new BuildError(`USER ${user}: no user "${name}" in the image's /etc/passwd`);
    uid = entry[2]!;
    gid ??= entry[3];
  }
  if (gid !== undefined && !/^\d+$/.test(gid)) {
    const entry = await lookup('group', gid);
    if (!entry) throw new BuildError(`USER ${user}: no group "${gid}" in the image's /etc/group`);
    gid = entry[2]!;
  }
  // The image's own passwd/group files are input like any other: only numbers go on (the
  // runtime puts them on a command line).
  if (!/^\d+$/.test(uid) || (gid !== undefined && !/^\d+$/.test(gid))) {
    throw new BuildError(`USER ${user}: the image's /etc/passwd or /etc/group gives a non-numeric id`);
  }
  input.log.line(`Processes run as uid ${uid}, gid ${gid ?? uid} (USER ${user})`);
  return `${uid}:${gid ?? uid}`;
}
