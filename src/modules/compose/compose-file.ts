import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Node, type YAMLMap } from 'yaml';
import { AppError } from '../../platform/errors.js';

/** A Compose file is read whole into memory and walked: bounded (docs/compose.md). */
export const MAX_COMPOSE_BYTES = 256 * 1024;
export const MAX_COMPOSE_SERVICES = 50;
const MAX_VALUE_BYTES = 32 * 1024;

/** Something of the file the platform does not map, and why: listed in the plan, never dropped silently. */
export interface Unmapped {
  service: string | null;
  key: string;
  line: number;
  reason: string;
}

export interface ComposeService {
  name: string;
  line: number;
  build: { context: string } | null;
  image: string | null;
  environment: Record<string, string>;
  /** The line of each variable of `environment`, for what the plan says about it. */
  environmentLines: Record<string, number>;
  envFiles: string[];
  healthCheckPath: string | null;
  healthCheckTimeout: number | null;
  replicas: number | null;
  dependsOn: string[];
  /** `command`, as one shell line: the application's start command. */
  command: string | null;
  /** Its mounts of top-level named volumes (each becomes a volume of the application). */
  volumes: NamedMount[];
  /** Every `volumes:` entry as written, resolved against the top-level volumes once the whole file is read. */
  mounts: Mount[];
}

export interface NamedMount {
  /** The volume's name as the volumes API takes it (lowercase letters, digits, '-'). */
  name: string;
  /** Its name in the file. */
  source: string;
  path: string;
  line: number;
  /** `x-slipway-size` of the top-level volume, in MiB; null: the default. */
  sizeMiB: number | null;
}

interface Mount {
  source: string;
  target: string;
  type: 'volume' | 'bind' | 'other';
  readOnly: boolean;
  spec: string;
  node: Node;
}

/** The top-level named volumes: their line and `x-slipway-size`. */
interface TopVolume {
  line: number;
  node: Node;
  sizeMiB: number | null;
  used: boolean;
}

/** The bounds of a volume's size (the volumes API's, src/modules/volumes). */
const MIN_VOLUME_MIB = 16;
const MAX_VOLUME_MIB = 1024 * 1024;

export interface ComposeFile {
  services: ComposeService[];
  unmapped: Unmapped[];
}

const SERVICE_NAME = /^[a-z0-9][a-z0-9_.-]{0,62}$/i;

/** Service keys that have no counterpart here, with the reason shown to the user. */
const UNMAPPED_SERVICE_KEYS: Record<string, string> = {
  networks: 'applications reach each other through their URLs and add-ons through their variables: no networks',
  network_mode: 'every instance runs in its own network namespace: the network mode is the platform’s',
  privileged: 'instances never run privileged (code deployed here is untrusted)',
  cap_add: 'instances get no added capabilities',
  cap_drop: 'instances already run with no capabilities',
  devices: 'no host device is given to an instance',
  security_opt: 'the sandbox sets the security options',
  user: 'built images run as the platform’s unprivileged user (an image’s USER is honoured)',
  container_name: 'instance names are the platform’s (application, process type, number)',
  hostname: 'instance host names are the platform’s',
  restart: 'the platform restarts crashed instances itself',
  volumes_from: 'instances share no file systems',
  pid: 'every instance has its own process namespace',
  ipc: 'every instance has its own IPC namespace',
  extra_hosts: 'an instance’s /etc/hosts is the platform’s',
  dns: 'an instance’s resolver is the platform’s',
  logging: 'logs go to the platform’s log (and its drains: `slipway drains`)',
  labels: 'container labels have no meaning here',
  entrypoint: 'the entrypoint is the image’s (or the builder’s): set the command in the Procfile',
  working_dir: 'the working directory is the build’s (or the image’s WORKDIR)',
  expose: 'the web process listens on $PORT; other ports are not reachable from outside the instance',
  links: 'applications reach each other through their URLs',
  secrets: 'Compose secrets are files: set them with `slipway config set --secret` instead',
  configs: 'Compose configs are files: put them in the build context or in variables',
  ulimits: 'limits come from the pod class (`slipway scale`)',
  mem_limit: 'memory comes from the pod class (`slipway scale NAME=N:class`)',
  cpus: 'CPU comes from the pod class (`slipway scale NAME=N:class`)',
  profiles: 'profiles are not applied: every service is imported',
  stdin_open: 'instances have no terminal (use `slipway run` or `slipway exec`)',
  tty: 'instances have no terminal (use `slipway run` or `slipway exec`)',
  init: 'the sandbox reaps processes itself',
  stop_signal: 'instances stop with SIGTERM, then SIGKILL after the grace period',
  stop_grace_period: 'the grace period is the platform’s (RUNTIME_STOP_GRACE_MS)',
  platform: 'images are built and run for the server’s own architecture',
  pull_policy: 'images are pulled when deployed, pinned by digest',
};

/** Top-level keys other than services. */
const UNMAPPED_TOP_KEYS: Record<string, string> = {
  networks: 'applications reach each other through their URLs and add-ons through their variables: no networks',
  secrets: 'Compose secrets are files: set them with `slipway config set --secret` instead',
  configs: 'Compose configs are files: put them in the build context or in variables',
};
const IGNORED_TOP_KEYS = new Set(['version', 'name']);

class Walker {
  readonly unmapped: Unmapped[] = [];
  constructor(private readonly lines: LineCounter) {}

  line(node: Node | null | undefined): number {
    return node?.range ? this.lines.linePos(node.range[0]).line : 1;
  }

  fail(node: Node | null | undefined, message: string): never {
    const line = this.line(node);
    throw new AppError('VALIDATION', `compose file, line ${line}: ${message}`, [{ field: 'compose', message: `line ${line}: ${message}` }]);
  }

  skip(service: string | null, key: string, node: Node | null | undefined, reason: string) {
    this.unmapped.push({ service, key, line: this.line(node), reason });
  }

  map(node: unknown, what: string): YAMLMap<unknown, unknown> {
    if (!isMap(node)) this.fail(node as Node, `${what} must be a mapping`);
    return node;
  }

  text(node: unknown, what: string): string {
    if (!isScalar(node) || node.value === null || typeof node.value === 'object') this.fail(node as Node, `${what} must be a string`);
    const value = String(node.value);
    if (Buffer.byteLength(value) > MAX_VALUE_BYTES) this.fail(node, `${what} is longer than ${MAX_VALUE_BYTES} bytes`);
    return value;
  }

  /** A list of strings, or (for depends_on, environment…) a mapping whose keys are the items. */
  keysOrItems(node: unknown, what: string): Array<{ key: string; value: unknown; node: Node }> {
    if (isSeq(node)) return node.items.map((item) => ({ key: this.text(item, what), value: null, node: item as Node }));
    if (isMap(node)) return node.items.map((pair) => ({ key: this.text(pair.key, what), value: pair.value, node: pair.key as Node }));
    this.fail(node as Node, `${what} must be a list or a mapping`);
  }
}

/**
 * Parses a Compose file's text into the services the platform can map and the list of what it
 * cannot (with reasons). A malformed file is a 422 naming its line.
 */
export function parseComposeFile(text: string): ComposeFile {
  if (Buffer.byteLength(text) > MAX_COMPOSE_BYTES) {
    throw new AppError('VALIDATION', `compose file: larger than ${MAX_COMPOSE_BYTES} bytes`, [
      { field: 'compose', message: `at most ${MAX_COMPOSE_BYTES} bytes` },
    ]);
  }
  const lines = new LineCounter();
  // The syntax tree is walked, never expanded: an alias where a value is expected is refused (no
  // billion laughs), and a merge key (`<<`) stays a plain key, listed as not mapped.
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const w = new Walker(lines);
  const problem = doc.errors[0];
  if (problem) {
    const line = lines.linePos(problem.pos[0]).line;
    const message = problem.message.split('\n')[0]!;
    throw new AppError('VALIDATION', `compose file, line ${line}: ${message}`, [{ field: 'compose', message: `line ${line}: ${message}` }]);
  }
  const root = w.map(doc.contents, 'the file');
  const topVolumes = new Map<string, TopVolume>();
  let servicesNode: unknown = null;
  for (const pair of root.items) {
    const key = w.text(pair.key, 'a top-level key');
    if (key === 'services') servicesNode = pair.value;
    else if (key === 'volumes') parseTopVolumes(w, pair.value, topVolumes);
    else if (IGNORED_TOP_KEYS.has(key)) continue;
    else
      w.skip(
        null,
        key,
        pair.key as Node,
        (Object.hasOwn(UNMAPPED_TOP_KEYS, key) ? UNMAPPED_TOP_KEYS[key] : undefined) ?? 'not a Compose key this import knows',
      );
  }
  if (!servicesNode) w.fail(doc.contents as Node, 'the file has no `services`');
  const servicesMap = w.map(servicesNode, '`services`');
  if (servicesMap.items.length === 0) w.fail(servicesMap, '`services` is empty');
  if (servicesMap.items.length > MAX_COMPOSE_SERVICES)
    w.fail(servicesMap, `at most ${MAX_COMPOSE_SERVICES} services (this file has ${servicesMap.items.length})`);

  const services = servicesMap.items.map((pair) => parseService(w, w.text(pair.key, 'a service name'), pair.key as Node, pair.value));
  const names = new Set(services.map((s) => s.name));
  for (const s of services)
    for (const dep of s.dependsOn)
      if (!names.has(dep)) w.fail(null, `service ${s.name} depends on ${dep}, which is not a service of the file`);
  // Which service mounts each named volume first: a volume belongs to one application.
  const owners = new Map<string, string>();
  for (const s of services) resolveMounts(w, s, topVolumes, owners);
  for (const [name, v] of topVolumes)
    if (!v.used) w.skip(null, `volumes.${name}`, v.node, 'no service of the file mounts it: no volume is created');
  return { services, unmapped: w.unmapped };
}

function parseService(w: Walker, name: string, keyNode: Node, node: unknown): ComposeService {
  if (!SERVICE_NAME.test(name)) w.fail(keyNode, `service name '${name}': letters, digits, '_', '.' and '-' only (at most 63)`);
  const body = w.map(node, `service ${name}`);
  const service: ComposeService = {
    name,
    line: w.line(keyNode),
    build: null,
    image: null,
    environment: {},
    environmentLines: {},
    envFiles: [],
    healthCheckPath: null,
    healthCheckTimeout: null,
    replicas: null,
    dependsOn: [],
    command: null,
    volumes: [],
    mounts: [],
  };
  for (const pair of body.items) {
    const key = w.text(pair.key, 'a key');
    const value = pair.value as Node;
    const at = pair.key as Node;
    switch (key) {
      case 'image':
        service.image = w.text(value, `${name}.image`);
        break;
      case 'build':
        if (isScalar(value)) service.build = { context: w.text(value, `${name}.build`) };
        else {
          const build = w.map(value, `${name}.build`);
          for (const b of build.items) {
            const bk = w.text(b.key, 'a key');
            if (bk === 'context') service.build = { context: w.text(b.value, `${name}.build.context`) };
            else
              w.skip(
                name,
                `build.${bk}`,
                b.key as Node,
                bk === 'dockerfile'
                  ? 'the builder uses the context’s own Dockerfile (or detects the language): name it Dockerfile'
                  : 'the build takes only its context',
              );
          }
          service.build ??= { context: '.' };
        }
        break;
      case 'command':
        parseCommand(w, service, at, value);
        break;
      case 'environment':
        for (const entry of w.keysOrItems(value, `${name}.environment`)) {
          if (isSeq(value)) {
            const eq = entry.key.indexOf('=');
            if (eq <= 0)
              w.skip(name, `environment.${entry.key}`, entry.node, 'a variable without a value takes it from your shell: not imported');
            else {
              service.environment[entry.key.slice(0, eq)] = entry.key.slice(eq + 1);
              service.environmentLines[entry.key.slice(0, eq)] = w.line(entry.node);
            }
          } else if (entry.value === null || (isScalar(entry.value) && entry.value.value === null))
            w.skip(name, `environment.${entry.key}`, entry.node, 'a variable without a value takes it from your shell: not imported');
          else {
            service.environment[entry.key] = w.text(entry.value, `${name}.environment.${entry.key}`);
            service.environmentLines[entry.key] = w.line(entry.node);
          }
        }
        break;
      case 'env_file':
        if (isScalar(value)) service.envFiles.push(w.text(value, `${name}.env_file`));
        else if (isSeq(value))
          for (const item of value.items)
            service.envFiles.push(isMap(item) ? w.text(item.get('path', true), `${name}.env_file.path`) : w.text(item, `${name}.env_file`));
        else w.fail(value, `${name}.env_file must be a path or a list of paths`);
        break;
      case 'ports':
        parsePorts(w, name, value);
        break;
      case 'healthcheck':
        parseHealthcheck(w, service, value);
        break;
      case 'deploy':
        for (const d of w.map(value, `${name}.deploy`).items) {
          const dk = w.text(d.key, 'a key');
          if (dk === 'replicas') {
            const n = Number(w.text(d.value, `${name}.deploy.replicas`));
            if (!Number.isInteger(n) || n < 0 || n > 100) w.fail(d.value as Node, `${name}.deploy.replicas must be a whole number 0-100`);
            service.replicas = n;
          } else
            w.skip(
              name,
              `deploy.${dk}`,
              d.key as Node,
              dk === 'resources'
                ? 'resources come from the pod class (`slipway scale NAME=N:class`)'
                : 'only deploy.replicas maps (to scale)',
            );
        }
        break;
      case 'depends_on':
        service.dependsOn = w.keysOrItems(value, `${name}.depends_on`).map((d) => d.key);
        break;
      case 'volumes':
        if (!isSeq(value)) w.fail(value, `${name}.volumes must be a list`);
        for (const item of value.items) service.mounts.push(parseMount(w, name, item as Node));
        break;
      default:
        w.skip(
          name,
          key,
          at,
          (Object.hasOwn(UNMAPPED_SERVICE_KEYS, key) ? UNMAPPED_SERVICE_KEYS[key] : undefined) ?? 'not a Compose key this import knows',
        );
    }
  }
  if (!service.image && !service.build) w.fail(keyNode, `service ${name} has neither \`image\` nor \`build\``);
  return service;
}

/** `volumes:` at the top: each named volume, with its size from `x-slipway-size`; other keys are listed as not mapped. */
function parseTopVolumes(w: Walker, node: unknown, into: Map<string, TopVolume>) {
  if (node === null || (isScalar(node) && node.value === null)) return;
  for (const pair of w.map(node, '`volumes`').items) {
    const name = w.text(pair.key, 'a volume name');
    const volume: TopVolume = { line: w.line(pair.key as Node), node: pair.key as Node, sizeMiB: null, used: false };
    const body = pair.value;
    if (body !== null && !(isScalar(body) && body.value === null))
      for (const v of w.map(body, `volumes.${name}`).items) {
        const vk = w.text(v.key, 'a key');
        if (vk === 'x-slipway-size') {
          const text = w.text(v.value, `volumes.${name}.x-slipway-size`);
          const mib = sizeMiB(text);
          if (mib === null || mib < MIN_VOLUME_MIB || mib > MAX_VOLUME_MIB)
            w.fail(v.value as Node, `volumes.${name}.x-slipway-size: a size from 16M to 1024G (M and G are MiB and GiB), not '${text}'`);
          volume.sizeMiB = mib;
        } else
          w.skip(
            null,
            `volumes.${name}.${vk}`,
            v.key as Node,
            'a volume is a disk of the platform (its size: x-slipway-size): drivers, external volumes and their options are not mapped',
          );
      }
    into.set(name, volume);
  }
}

function sizeMiB(text: string): number | null {
  const m = /^(\d{1,7})\s*(M|Mi|MiB|MB|G|Gi|GiB|GB)$/i.exec(text.trim());
  if (!m) return null;
  return Number(m[1]) * (m[2]!.toUpperCase().startsWith('G') ? 1024 : 1);
}

/** One `volumes:` entry of a service: `source:target[:mode]`, or the long form's type, source, target and read_only. */
function parseMount(w: Walker, service: string, item: Node): Mount {
  if (isMap(item)) {
    const get = (k: string) => {
      const v = item.get(k, true);
      return v === undefined ? '' : w.text(v, `${service}.volumes.${k}`);
    };
    const source = get('source');
    const target = get('target');
    const type = get('type') || 'volume';
    return {
      source,
      target,
      type: type === 'volume' || type === 'bind' ? type : 'other',
      readOnly: get('read_only') === 'true',
      spec: `${source}:${target}`,
      node: item,
    };
  }
  const spec = w.text(item, `${service}.volumes`);
  const parts = spec.split(':');
  if (parts.length === 1) return { source: '', target: spec, type: 'volume', readOnly: false, spec, node: item };
  const [source = '', target = '', mode = ''] = parts;
  const bind = /^[./~]/.test(source);
  return { source, target, type: bind ? 'bind' : 'volume', readOnly: mode.split(',').includes('ro'), spec, node: item };
}

/** A mount of a top-level named volume becomes the application's volume; every other one is listed with the reason. */
function resolveMounts(w: Walker, service: ComposeService, top: Map<string, TopVolume>, owners: Map<string, string>) {
  for (const m of service.mounts) {
    const key = `volumes: ${m.spec}`;
    if (m.type === 'bind')
      w.skip(
        service.name,
        key,
        m.node,
        'a bind mount: the host’s paths are not the platform’s (put the files in the build context or a volume)',
      );
    else if (m.type === 'other') w.skip(service.name, key, m.node, 'only named volumes map (to the application’s volumes)');
    else if (!m.source)
      w.skip(service.name, key, m.node, 'an anonymous volume: name it in the top-level `volumes` to keep its data (as a volume)');
    else if (!top.has(m.source))
      w.skip(service.name, key, m.node, `${m.source} is not a top-level named volume of the file (Compose needs it declared)`);
    else {
      const volume = top.get(m.source)!;
      volume.used = true;
      const first = owners.get(m.source);
      if (first && first !== service.name) {
        w.skip(service.name, key, m.node, `a volume belongs to one application: ${first} mounts ${m.source}`);
        continue;
      }
      owners.set(m.source, service.name);
      if (m.readOnly) w.skip(service.name, `${key} (read-only)`, m.node, 'volumes are mounted read-write: the mode is not kept');
      service.volumes.push({
        name: volumeNameFor(m.source),
        source: m.source,
        path: m.target,
        line: w.line(m.node),
        sizeMiB: volume.sizeMiB,
      });
    }
  }
}

/** The volumes API's names: a lowercase letter first, then letters, digits and '-' (at most 40). */
function volumeNameFor(source: string): string {
  const slug = source
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
  return (/^[a-z]/.test(slug) ? slug : `v-${slug}`).slice(0, 40).replace(/-+$/, '');
}

/** The longest start command an application takes (its column's bound, migration 0057). */
const MAX_COMMAND_BYTES = 4096;

/**
 * `command` becomes the application's start command, run by `sh -c`: a string as written, a
 * list with each item quoted for the shell (as Compose passes them, one argument each).
 */
function parseCommand(w: Walker, service: ComposeService, at: Node, node: Node) {
  const name = service.name;
  const command = isSeq(node) ? node.items.map((i) => shellQuote(w.text(i, `${name}.command`))).join(' ') : w.text(node, `${name}.command`);
  if (/[\r\n\0]/.test(command) || command.trim() === '')
    w.skip(name, 'command', at, 'a start command is one line of shell: put a longer script in the build context and run it');
  else if (Buffer.byteLength(command) > MAX_COMMAND_BYTES)
    w.skip(name, 'command', at, `a start command is at most ${MAX_COMMAND_BYTES} bytes`);
  else service.command = command;
}

function shellQuote(arg: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

function parsePorts(w: Walker, name: string, node: Node) {
  if (!isSeq(node)) w.fail(node, `${name}.ports must be a list`);
  for (const item of node.items) {
    const spec = isMap(item)
      ? `${String(item.get('published') ?? '')}:${String(item.get('target') ?? '')}`.replace(/^:/, '')
      : w.text(item, `${name}.ports`);
    const published = spec.split(':').length > 1;
    w.skip(
      name,
      `ports: ${spec}`,
      item as Node,
      published
        ? 'host ports are not published: the web process listens on $PORT (set by the platform) and the edge serves it at the application’s URL'
        : 'the web process listens on $PORT (set by the platform; an image’s EXPOSE is honoured), not on a port of the file',
    );
  }
}

/** An HTTP check (a URL in its test) maps to the health-check path; its start period to the health-check timeout. */
function parseHealthcheck(w: Walker, service: ComposeService, node: Node) {
  const name = service.name;
  for (const pair of w.map(node, `${name}.healthcheck`).items) {
    const key = w.text(pair.key, 'a key');
    const value = pair.value as Node;
    if (key === 'test') {
      const test = isSeq(value)
        ? value.items.map((i) => w.text(i, `${name}.healthcheck.test`)).join(' ')
        : w.text(value, `${name}.healthcheck.test`);
      const url = /https?:\/\/[^/\s'"]+(\/[^\s'"|;&]*)?/.exec(test);
      if (url) service.healthCheckPath = url[1] || '/';
      else w.skip(name, 'healthcheck.test', pair.key as Node, 'only an HTTP check (a URL in the test) maps: to the health-check path');
    } else if (key === 'start_period') {
      const seconds = durationSeconds(w.text(value, `${name}.healthcheck.start_period`));
      if (seconds === null) w.fail(value, `${name}.healthcheck.start_period is not a duration (e.g. 30s, 1m30s)`);
      service.healthCheckTimeout = Math.min(3600, Math.max(1, Math.ceil(seconds)));
    } else if (key === 'disable') {
      w.skip(name, 'healthcheck.disable', pair.key as Node, 'a web process is always checked before it takes traffic');
    } else
      w.skip(name, `healthcheck.${key}`, pair.key as Node, 'the platform checks once, at deploy (HEALTH_CHECK_TIMEOUT_SECONDS bounds it)');
  }
}

function durationSeconds(text: string): number | null {
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text.trim()) return null;
  const unit = { ms: 0.001, s: 1, m: 60, h: 3600 } as const;
  return parts.reduce((sum, p) => sum + Number(p[1]) * unit[p[2] as keyof typeof unit], 0);
}

/** Services in an order where each comes after what it depends on; a cycle is a 422. */
export function creationOrder(services: ComposeService[]): ComposeService[] {
  const byName = new Map(services.map((s) => [s.name, s]));
  const done = new Set<string>();
  const visiting = new Set<string>();
  const order: ComposeService[] = [];
  const visit = (s: ComposeService) => {
    if (done.has(s.name)) return;
    if (visiting.has(s.name))
      throw new AppError('VALIDATION', `compose file, line ${s.line}: depends_on makes a cycle through ${s.name}`, [
        { field: 'compose', message: `line ${s.line}: a depends_on cycle` },
      ]);
    visiting.add(s.name);
    for (const dep of s.dependsOn) visit(byName.get(dep)!);
    visiting.delete(s.name);
    done.add(s.name);
    order.push(s);
  };
  for (const s of services) visit(s);
  return order;
}
