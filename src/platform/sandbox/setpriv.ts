/**
 * The `setpriv` command line that runs the rest of a command as `uid` (its group the same number):
 * no supplementary groups, no new privileges, no inheritable capabilities and, unless a mapped root
 * needs its namespace's capabilities after exec, an empty bounding set.
 */
export function asSandboxUser(uid: number, options: { keepBoundingSet?: boolean } = {}): string[] {
  return [
    'setpriv',
    `--reuid=${uid}`,
    `--regid=${uid}`,
    '--clear-groups',
    '--no-new-privs',
    '--inh-caps=-all',
    ...(options.keepBoundingSet ? [] : ['--bounding-set=-all']),
  ];
}
