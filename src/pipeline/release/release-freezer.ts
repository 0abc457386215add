import type { SecretBox } from '../../platform/crypto/secret-box.js';
import type { ChangeSet, ProcessDefinitions } from '../../platform/db/schema.js';
import type { ResolvedVariable } from '../../modules/configurations/index.js';
import { SECRET_MASK } from '../../modules/configurations/index.js';

/** A frozen variable as a release shows it: secrets read "**secret**". */
export interface DisplayedVariable {
  name: string;
  value: string;
  secret: boolean;
  buildtime: boolean;
  /** The scope it came from: organization, team, project, environment or application. */
  scope: string;
}

/** What `configuration_sealed` holds (sealed JSON): the plain values the release runs with. */
export interface SealedConfiguration {
  values: Record<string, string>;
}

export function displayConfiguration(resolved: ResolvedVariable[]): DisplayedVariable[] {
  return resolved.map((v) => ({
    name: v.name,
    value: v.secret ? SECRET_MASK : v.value,
    secret: v.secret,
    buildtime: v.buildtime,
    scope: v.scope,
  }));
}

export function sealConfiguration(secrets: SecretBox, resolved: ResolvedVariable[]): string {
  const sealed: SealedConfiguration = { values: Object.fromEntries(resolved.map((v) => [v.name, v.value])) };
  return secrets.seal(JSON.stringify(sealed));
}

export function openConfiguration(secrets: SecretBox, sealed: string | null): Record<string, string> {
  if (!sealed) return {};
  return (JSON.parse(secrets.open(sealed)) as SealedConfiguration).values;
}

/** `{added, removed, changed}` between two name → fingerprint maps (names sorted). */
export function diff(previous: Map<string, string> | null, current: Map<string, string>): ChangeSet {
  const before = previous ?? new Map<string, string>();
  const added = [...current.keys()].filter((k) => !before.has(k)).sort();
  const removed = [...before.keys()].filter((k) => !current.has(k)).sort();
  const changed = [...current.keys()].filter((k) => before.has(k) && before.get(k) !== current.get(k)).sort();
  return { added, removed, changed };
}

/**
 * A variable's fingerprint for the diff: its value and flags. Only ever compared in
 * memory (values come from the sealed configurations), never stored or shown.
 */
export function configurationFingerprints(values: Record<string, string>, display: DisplayedVariable[]): Map<string, string> {
  return new Map(display.map((d) => [d.name, JSON.stringify([values[d.name] ?? '', d.secret, d.buildtime])]));
}

/** A stored release's configuration fingerprints; if its values cannot be opened (key gone), by display only. */
export function frozenFingerprints(secrets: SecretBox, release: { configuration: unknown; configuration_sealed: string | null }) {
  const display = (release.configuration ?? []) as DisplayedVariable[];
  let values: Record<string, string>;
  try {
    values = openConfiguration(secrets, release.configuration_sealed);
  } catch {
    values = Object.fromEntries(display.map((d) => [d.name, d.value]));
  }
  return configurationFingerprints(values, display);
}

/** What an image contributes to a release, by name: its digest, commit and each process type's command. */
export function imageFingerprints(image: {
  image_id: string | null;
  commit_sha: string | null;
  processes: ProcessDefinitions | null;
}): Map<string, string> {
  const out = new Map<string, string>();
  out.set('image_id', image.image_id ?? '');
  out.set('commit_sha', image.commit_sha ?? '');
  for (const [name, p] of Object.entries(image.processes ?? {})) out.set(`processes.${name}`, JSON.stringify(p));
  return out;
}

/** One line of a release log naming what a diff added, removed and changed. */
export const describeChanges = (label: string, c: { added: string[]; removed: string[]; changed: string[] }) =>
  `${label}: added [${c.added.join(', ')}], removed [${c.removed.join(', ')}], changed [${c.changed.join(', ')}]`;
