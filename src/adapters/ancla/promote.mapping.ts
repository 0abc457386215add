/** A release's view (`ReleasesService.detail`) as the release an environment serves, in a promotion preview. */
export function toServingRelease(
  release: { id: string; version: number; commit_sha: string | null; image: { version: number; commit_sha: string | null } | null } | null,
) {
  if (!release) return null;
  return {
    release_id: release.id,
    version: release.version,
    build_version: release.image?.version ?? null,
    commit_sha: release.commit_sha ?? release.image?.commit_sha ?? null,
  };
}

type Variable = { name: string; value: string; secret: boolean };

/** Names added, removed and changed from `current` to `next` (case-insensitive names; secret values masked on both sides). */
export function configurationDiff(next: Variable[], current: Variable[]) {
  const byName = (vars: Variable[]) => new Map(vars.map((v) => [v.name.toLowerCase(), v]));
  const [to, from] = [byName(next), byName(current)];
  return {
    added: next.filter((v) => !from.has(v.name.toLowerCase())).map((v) => v.name),
    removed: current.filter((v) => !to.has(v.name.toLowerCase())).map((v) => v.name),
    changed: next
      .filter((v) => {
        const was = from.get(v.name.toLowerCase());
        return was !== undefined && !v.secret && !was.secret && was.value !== v.value;
      })
      .map((v) => v.name),
  };
}
