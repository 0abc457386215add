/**
 * Places a volume may not cover: the root, the kernel's views, the system's programs and
 * libraries (bound read-only into every sandbox), and the sandbox's private /tmp.
 */
const RESERVED = [
  '/proc',
  '/sys',
  '/dev',
  '/usr',
  '/etc',
  '/bin',
  '/sbin',
  '/lib',
  '/lib32',
  '/lib64',
  '/libx32',
  '/opt',
  '/tmp',
  '/var/tmp',
  '/run',
  '/boot',
];

/** Why `path` cannot be a volume's mount path, or null when it can (absolute, normalized, not reserved). */
export function mountPathProblem(path: string): string | null {
  if (!path.startsWith('/')) return 'must be an absolute path, e.g. /data';
  if (path === '/') return 'cannot be / (the whole file system): choose a directory such as /data';
  if (path.length > 200) return 'is too long (at most 200 characters)';
  const parts = path.slice(1).split('/');
  if (parts.some((p) => p === '' || p === '.' || p === '..' || !/^[A-Za-z0-9._-]+$/.test(p)))
    return 'must be a normalized path of letters, digits, ".", "_" and "-" (no "..", no empty parts, no trailing /)';
  const reserved = RESERVED.find((r) => path === r || path.startsWith(`${r}/`));
  if (reserved) return `cannot be in ${reserved} (the system's or the kernel's): choose a directory such as /data`;
  return null;
}
