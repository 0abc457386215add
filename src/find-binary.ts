import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

// Apart from config.ts so that a process that does not validate the whole configuration (the edge role) finds them too.

/** The nginx binary: Debian's /usr/sbin/nginx, or the first `nginx` on PATH; null when none is executable. */
export function findNginx(): string | null {
  return findSbin('nginx');
}

/** The HAProxy binary: Debian's /usr/sbin/haproxy, or the first `haproxy` on PATH; null when none is executable. */
export function findHaproxy(): string | null {
  return findSbin('haproxy');
}

function findSbin(name: string): string | null {
  const candidates = [
    `/usr/sbin/${name}`,
    ...(process.env.PATH ?? '')
      .split(delimiter)
      .filter(Boolean)
      .map((dir) => join(dir, name)),
  ];
  for (const path of candidates)
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // not there: the next one
    }
  return null;
}
