/**
 * Server-side apply field ownership for the fake Kubernetes API server, after
 * https://kubernetes.io/docs/reference/using-api/server-side-apply/: every field set is owned
 * by the field managers that set it (`metadata.managedFields`, FieldsV1 format), lists of
 * objects merge by their key (containers by name, env by name, container ports by
 * containerPort+protocol, Service ports by port+protocol, ...), other lists are atomic, and an
 * apply that changes a field another manager owns is a conflict unless forced.
 */

export type KObject = Record<string, any> & { metadata: Record<string, any> };

export interface ManagedFieldsEntry {
  manager: string;
  operation: 'Apply' | 'Update';
  apiVersion: string;
  time: string;
  fieldsType: 'FieldsV1';
  fieldsV1: Record<string, any>;
}

/** One field: its FieldsV1 path (`f:spec`, `k:{"name":"web"}`), and whether it is a list item rather than a value. */
interface Field {
  path: string[];
  item: boolean;
}
type FieldSet = Map<string, Field>;

const SEPARATOR = '\n';
const join = (path: string[]) => path.join(SEPARATOR);
const isObject = (v: unknown): v is Record<string, any> => v !== null && typeof v === 'object' && !Array.isArray(v);
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** The merge key of the list at `path` (its last segment is `f:<name>`), or null for an atomic list. */
function mergeKeys(path: string[]): string[] | null {
  const name = path[path.length - 1]?.slice(2);
  switch (name) {
    case 'containers':
    case 'initContainers':
    case 'ephemeralContainers':
    case 'env':
    case 'volumes':
    case 'imagePullSecrets':
      return ['name'];
    case 'volumeMounts':
      return ['mountPath'];
    case 'conditions':
      return ['type'];
    case 'ports':
      return path.some((s) => s === 'f:containers' || s === 'f:initContainers') ? ['containerPort', 'protocol'] : ['port', 'protocol'];
    default:
      return null;
  }
}

function itemSegment(item: Record<string, any>, keys: string[]): string {
  // The API server defaults `protocol` before merging; so does the fake.
  return `k:${JSON.stringify(Object.fromEntries(keys.map((k) => [k, item[k] ?? (k === 'protocol' ? 'TCP' : null)])))}`;
}

function keyedList(value: unknown, path: string[]): string[] | null {
  const keys = mergeKeys(path);
  return keys && Array.isArray(value) && value.every(isObject) ? keys : null;
}

/** What a manager sets: everything but identity, status and server-set metadata. */
export function managedView(object: KObject): Record<string, any> {
  const { apiVersion: _a, kind: _k, status: _s, metadata, ...rest } = object;
  const meta: Record<string, any> = {};
  for (const k of ['labels', 'annotations', 'finalizers', 'ownerReferences']) if (metadata?.[k] !== undefined) meta[k] = metadata[k];
  return Object.keys(meta).length ? { metadata: meta, ...rest } : rest;
}

export function fieldsOf(view: Record<string, any>): FieldSet {
  const out: FieldSet = new Map();
  const walk = (value: unknown, path: string[]) => {
    if (isObject(value) && Object.keys(value).length > 0) {
      for (const [k, v] of Object.entries(value)) walk(v, [...path, `f:${k}`]);
      return;
    }
    const keys = keyedList(value, path);
    if (keys) {
      for (const item of value as Array<Record<string, any>>) {
        const itemPath = [...path, itemSegment(item, keys)];
        out.set(join(itemPath), { path: itemPath, item: true });
        walk(item, itemPath);
      }
      return;
    }
    if (path.length) out.set(join(path), { path, item: false });
  };
  walk(view, []);
  return out;
}

function getAt(object: unknown, path: string[]): unknown {
  let node: any = object;
  for (const segment of path) {
    if (node == null) return undefined;
    if (segment.startsWith('f:')) node = node[segment.slice(2)];
    else {
      const key = JSON.parse(segment.slice(2)) as Record<string, unknown>;
      node = Array.isArray(node)
        ? node.find((i) => isObject(i) && Object.entries(key).every(([k, v]) => (i[k] ?? (k === 'protocol' ? 'TCP' : null)) === v))
        : undefined;
    }
  }
  return node;
}

function removeAt(object: unknown, path: string[]) {
  const parent: any = getAt(object, path.slice(0, -1));
  const last = path[path.length - 1]!;
  if (last.startsWith('f:')) {
    if (isObject(parent)) delete parent[last.slice(2)];
  } else if (Array.isArray(parent)) {
    const item = getAt(object, path);
    const at = parent.indexOf(item);
    if (at >= 0) parent.splice(at, 1);
  }
}

/** Merges an applied configuration into the live object: maps field by field, keyed lists item by item. */
export function mergeApplied(live: unknown, applied: unknown, path: string[] = []): unknown {
  if (isObject(applied)) {
    const out: Record<string, any> = isObject(live) ? { ...live } : {};
    for (const [k, v] of Object.entries(applied)) out[k] = mergeApplied(out[k], v, [...path, `f:${k}`]);
    return out;
  }
  const keys = keyedList(applied, path);
  if (keys && Array.isArray(live) && keyedList(live, path)) {
    const liveItems = live as Array<Record<string, any>>;
    const appliedItems = applied as Array<Record<string, any>>;
    // Live items keep their place (merged with what was applied), new ones follow.
    const liveKeys = new Set(liveItems.map((l) => itemSegment(l, keys)));
    return [
      ...liveItems.map((l) => {
        const segment = itemSegment(l, keys);
        const match = appliedItems.find((a) => itemSegment(a, keys) === segment);
        return match ? mergeApplied(l, match, [...path, segment]) : l;
      }),
      ...appliedItems.filter((a) => !liveKeys.has(itemSegment(a, keys))).map((a) => structuredClone(a)),
    ];
  }
  return structuredClone(applied);
}

export function toFieldsV1(fields: FieldSet): Record<string, any> {
  const root: Record<string, any> = {};
  for (const { path, item } of fields.values()) {
    let node = root;
    for (const segment of path) node = node[segment] ??= {};
    if (item) node['.'] = {};
  }
  return root;
}

export function fromFieldsV1(fieldsV1: Record<string, any>): FieldSet {
  const out: FieldSet = new Map();
  const walk = (node: Record<string, any>, path: string[]) => {
    const children = Object.keys(node).filter((k) => k !== '.');
    if (path.length && ('.' in node || children.length === 0)) out.set(join(path), { path, item: '.' in node });
    for (const k of children) walk(node[k], [...path, k]);
  };
  walk(fieldsV1, []);
  return out;
}

/** `.spec.template.spec.containers[name="web"].image`: how the API server names a field in a conflict. */
function describePath(path: string[]): string {
  return path
    .map((s) =>
      s.startsWith('f:')
        ? `.${s.slice(2)}`
        : `[${Object.entries(JSON.parse(s.slice(2)))
            .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
            .join(',')}]`,
    )
    .join('');
}

export class ApplyConflict extends Error {
  constructor(readonly conflicts: Array<{ manager: string; apiVersion: string; field: string }>) {
    super(
      `Apply failed with ${conflicts.length} conflict${conflicts.length === 1 ? '' : 's'}: ${conflicts.map((c) => `conflict with "${c.manager}" using ${c.apiVersion}: ${c.field}`).join('\n')}`,
    );
  }
}

/**
 * Server-side apply of `applied` by `manager` onto `live` (null: a create). Returns the new
 * object (metadata as the live one, managedFields updated) or throws `ApplyConflict`.
 */
export function serverSideApply(
  live: KObject | null,
  applied: KObject,
  manager: string,
  force: boolean,
  apiVersion: string,
  time: string,
): KObject {
  const entries: ManagedFieldsEntry[] = structuredClone(live?.metadata.managedFields ?? []);
  const appliedFields = fieldsOf(managedView(applied));
  const mine = entries.find((e) => e.manager === manager && e.operation === 'Apply');
  const others = entries.filter((e) => e !== mine).map((e) => ({ entry: e, fields: fromFieldsV1(e.fieldsV1) }));

  const conflicts: Array<{ manager: string; apiVersion: string; field: string; key: string }> = [];
  for (const { entry, fields } of others) {
    for (const [key, field] of appliedFields) {
      if (field.item || !fields.has(key)) continue;
      if (!same(getAt(live, field.path), getAt(applied, field.path)))
        conflicts.push({ manager: entry.manager, apiVersion: entry.apiVersion, field: describePath(field.path), key });
    }
  }
  if (conflicts.length && !force) throw new ApplyConflict(conflicts);
  // Forced: the fields change owner.
  for (const c of conflicts) for (const o of others) if (o.entry.manager === c.manager) o.fields.delete(c.key);

  const next: KObject = structuredClone(
    live ?? { metadata: { name: applied.metadata.name, ...(applied.metadata.namespace ? { namespace: applied.metadata.namespace } : {}) } },
  );
  // Fields this manager applied before and no longer does go, unless another manager owns them too.
  const ownedByOthers = (key: string) => others.some((o) => [...o.fields.keys()].some((k) => k === key || k.startsWith(key + SEPARATOR)));
  const dropped = [...(mine ? fromFieldsV1(mine.fieldsV1) : (new Map() as FieldSet)).entries()]
    .filter(([key]) => !appliedFields.has(key) && !ownedByOthers(key))
    .sort(([a], [b]) => a.length - b.length);
  for (const [, field] of dropped) removeAt(next, field.path);

  const merged = mergeApplied(next, managedView(applied)) as KObject;
  const updated: ManagedFieldsEntry[] = [
    ...others.filter((o) => o.fields.size > 0).map((o) => ({ ...o.entry, fieldsV1: toFieldsV1(o.fields) })),
    { manager, operation: 'Apply', apiVersion, time, fieldsType: 'FieldsV1', fieldsV1: toFieldsV1(appliedFields) },
  ];
  return { ...merged, metadata: { ...merged.metadata, managedFields: updated } };
}

/**
 * An update (PUT, merge patch, the scale subresource) by `manager`: the fields it changed
 * become its own (operation Update) and leave every other manager.
 */
export function recordUpdate(
  before: KObject | null,
  after: KObject,
  manager: string,
  apiVersion: string,
  time: string,
): ManagedFieldsEntry[] {
  const entries: ManagedFieldsEntry[] = structuredClone(before?.metadata.managedFields ?? []);
  const beforeFields = before ? fieldsOf(managedView(before)) : (new Map() as FieldSet);
  const afterFields = fieldsOf(managedView(after));
  const changed: FieldSet = new Map();
  for (const [key, field] of afterFields) {
    if (field.item ? !beforeFields.has(key) : !same(getAt(before, field.path), getAt(after, field.path))) changed.set(key, field);
  }
  if (changed.size === 0) return entries;
  const result: ManagedFieldsEntry[] = [];
  let own: FieldSet = new Map();
  for (const entry of entries) {
    const fields = fromFieldsV1(entry.fieldsV1);
    if (entry.manager === manager && entry.operation === 'Update') {
      own = fields;
      continue;
    }
    for (const key of [...fields.keys()]) if (changed.has(key) || !afterFields.has(key)) fields.delete(key);
    if (fields.size) result.push({ ...entry, fieldsV1: toFieldsV1(fields) });
  }
  for (const [key, field] of changed) own.set(key, field);
  // Fields removed from the object leave their owner too.
  for (const key of [...own.keys()]) if (!afterFields.has(key)) own.delete(key);
  result.push({ manager, operation: 'Update', apiVersion, time, fieldsType: 'FieldsV1', fieldsV1: toFieldsV1(own) });
  return result;
}
