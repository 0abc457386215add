import { randomBytes } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { existsSync } from 'node:fs';
import { chmod, chown, lstat, mkdir, mkdtemp, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Config } from '../../config.js';
import { platformAuthFile } from '../crypto/registry-token.js';
import { MAX_CAPTURED_STDOUT_BYTES, run, type CommandResult, type RunOptions } from '../git/command.js';
import { runSandboxed, SandboxUnavailable, type Sandbox } from '../sandbox/index.js';
import { chmodBeneath, existsBeneath, holdDirectoryBeneath, readTextBeneath, statBeneath, UnsafePathError } from '../fs/beneath.js';
import { privateDir } from '../fs/private-dir.js';
import { contextHas, readContextFile } from './context-file.js';
import {
  IMAGE_ROOTFS_DIR,
  exposedPort,
  imageCommandLine,
  prepareArtifactDir,
  shellQuote,
  writeArtifactManifest,
  type ImageArtifact,
} from './image-artifact.js';
import { numericUser } from './image-user.js';
import { failIfOutOfMemory } from './out-of-memory.js';
import {
  BuildError,
  cacheScopeDir,
  type BuildInput,
  type BuildOutput,
  type Builder,
  type CacheScope,
  type ImagePuller,
  type ImagePullInput,
} from './port.js';
import { registryTarget, type RegistryTarget } from './registry-target.js';

/** Dockerfile names in order of preference: a Slipway-specific one wins over the generic one. */
export const DOCKERFILE_NAMES = ['Dockerfile.slipway', 'Dockerfile'];
/** The Dockerfile is read by the platform (to find base images and record it): bounded. */
const MAX_DOCKERFILE_BYTES = 1024 * 1024;
/** Character devices every process may use: name, major, minor. */
const DEVICE_NODES: Array<[string, number, number]> = [
  ['null', 1, 3],
  ['zero', 1, 5],
  ['random', 1, 8],
  ['urandom', 1, 9],
];
export const BUILDAH_MISSING =
  'This build context has a Dockerfile, but buildah is not installed on the build machine: apt-get install buildah';

export interface BuildahOptions {
  /** containers/storage root (vfs driver); its `run/` holds the run root. */
  storageRoot: string;
  registry: RegistryTarget | null;
  /** Looked up on PATH when unset. */
  buildahPath?: string | null;
  /**
   * With a sandbox, every buildah command of a build runs as the application's own user
   * (root only inside its user namespace), sees only its own storage, build context and
   * scratch directories, and stores its layers per application and cache scope. Without one (RUNTIME_ISOLATION=none)
   * buildah runs as root on the shared storage.
   */
  sandbox?: Sandbox | null;
  /**
   * Storage driver of the applications' own storages (sandboxed builds): `vfs` copies every
   * layer in full; `overlay` (kernel overlayfs inside the build's user namespace) stacks them.
   * The shared storage of the operator's base images stays vfs.
   */
  storageDriver?: StorageDriver | 'auto';
}

export type StorageDriver = 'vfs' | 'overlay';
/** Each driver keeps its own containers/storage below a workspace: switching drivers never reads the other's. */
const STORAGE_DIRS: Record<StorageDriver, string> = { vfs: 'storage', overlay: 'storage-overlay' };

/** What unpacking an image into an artifact reads of a build's input. */
type UnpackInput = Pick<BuildInput, 'artifactDir' | 'log' | 'signal'>;
/** What `buildah inspect --type image` says of an image (the parts read). */
interface InspectedImage {
  OCIv1?: { config?: ImageConfig; rootfs?: { diff_ids?: string[] } };
}
/** Where an export script copies the root file system (inside its sandbox), and the binds that put it there. */
interface ExportTarget {
  path: string;
  mounts: Array<{ source: string; target: string }>;
}
/** Where an export script writes the image's configuration (in the build's scratch directory). */
const INSPECT_FILE = 'inspect.json';
/** The exit code of a build script whose application storage lacks the operator's current base image. */
const BASE_IMAGES_CHANGED = 199;
/** How long a failed overlay probe keeps builds on vfs before the next build probes again. */
const OVERLAY_REPROBE_MS = 10 * 60_000;
/** Which command of an export script failed, by its exit code. */
const EXPORT_STEPS: Record<number, string> = {
  201: 'reading the image id',
  202: 'reading the image',
  203: 'creating a working container',
  204: 'mounting the image',
  205: 'copying its root file system',
  206: 'the image bud tagged was not the one it built',
};
/** What the platform writes to a build script's standard input once bud has tagged the image: the export may start. */
const EXPORT_NOW = 'export';
/** Labels recorded on the image: bounded, as they are the image author's text. */
const MAX_LABELS = 64;
const MAX_LABEL_CHARS = 1024;
/** `slipway.process.<type>` labels add process types (the web one comes from ENTRYPOINT + CMD). */
const PROCESS_LABEL = /^slipway\.process\.([a-z][a-z0-9_-]{0,62})$/;

/** Where one build's buildah commands run. */
interface Workspace {
  /** containers/storage root: holds `storage/` (or `storage-overlay/`) and `run/`. */
  storage: string;
  driver: StorageDriver;
  /** When sandboxed: whose user runs it, and the directories it may write (the rest of the host is out of view). */
  sandboxed: { applicationId: string; label: string; writable: string[]; cwd: string } | null;
}

/** The environment of a sandboxed buildah: never the platform's own (its pid 1 is readable from build steps). */
const SANDBOX_ENV = { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', HOME: '/tmp', LANG: 'C.UTF-8' };

/** A small file the sandboxed buildah wrote (image id, manifest digest), read without following a planted symlink. */
async function readOutputFile(dir: string, name: string): Promise<string> {
  try {
    return ((await readTextBeneath(dir, name, 4096)) ?? '').trim();
  } catch (err) {
    if (err instanceof UnsafePathError) throw new BuildError(`buildah's output file ${err.message}`);
    throw err;
  }
}

export function findOnPath(binary: string): string | null {
  for (const dir of (process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin').split(':')) {
    if (dir && existsSync(join(dir, binary))) return join(dir, binary);
  }
  return null;
}

export function createBuildahBuilder(config: Config, sandbox: Sandbox | null = null): BuildahBuilder {
  return new BuildahBuilder({
    storageRoot: config.BUILDAH_STORAGE_ROOT ?? join(config.dataDir, 'containers'),
    storageDriver: config.BUILDAH_STORAGE_DRIVER,
    registry: registryTarget(config),
    sandbox,
  });
}

/**
 * Images a Dockerfile reads (`FROM`, `COPY --from=`, `RUN --mount=...,from=`), except
 * `scratch`, its own stages (by name or index) and names built from ARGs. Names of
 * applications' images (`localhost/<org>/<project>/<app>`) are left out: a build may only
 * read the operator's base images, never another tenant's image.
 */
export function baseImageNames(dockerfile: string): string[] {
  const stages = new Set<string>();
  const names: string[] = [];
  const instruction =
    /^\s*(?:FROM\s+((?:--\S+\s+)*)(\S+)(?:\s+AS\s+(\S+))?|(?:COPY|ADD)\s+.*?--from=(\S+)|RUN\s+.*?--mount=\S*?\bfrom=([^,\s]+))/gim;
  for (const m of dockerfile.matchAll(instruction)) {
    const name = (m[2] ?? m[4] ?? m[5])!;
    const ownStage = stages.has(name.toLowerCase()) || (m[2] === undefined && /^\d+$/.test(name));
    if (m[3]) stages.add(m[3].toLowerCase());
    // A name starting with `-` is none (it would be read as an option by the buildah commands it is given to).
    if (name === 'scratch' || name.includes('$') || name.startsWith('-') || ownStage || /^localhost\/[^/]+\/[^/]+\/[^/]+/.test(name))
      continue;
    if (!names.includes(name)) names.push(name);
  }
  return names;
}

interface ImageConfig {
  Env?: string[];
  Entrypoint?: string[] | null;
  Cmd?: string[] | null;
  WorkingDir?: string;
  User?: string;
  ExposedPorts?: Record<string, unknown>;
  Labels?: Record<string, string>;
}

/**
 * Builds a `Dockerfile` (or `Dockerfile.slipway`) with buildah: daemonless, vfs storage,
 * chroot isolation (what works without a container engine). Build-time variables become
 * `--build-arg`s, build-time secrets `--secret` files (reachable only through
 * `RUN --mount=type=secret,id=NAME`, never in the image or its history). The image's root
 * file system is unpacked into the artifact directory for the runtime, and with a
 * registry configured the image is pushed to `<registry>/<org>/<project>/<app>:<version>`.
 *
 * Sandboxed (the default), buildah itself runs in the application's sandbox: as its user,
 * mapped to root only inside a user namespace of its own, with its own storage
 * (`<storage root>/apps/<application>/scopes/<cache scope>`); the operator's base images in the shared storage
 * are copied in when a Dockerfile names them. A `RUN` step that escapes buildah's chroot
 * lands in that sandbox, not on the host.
 */
export class BuildahBuilder implements Builder, ImagePuller {
  readonly name = 'buildah';
  readonly chosenBecause = 'the build context has a Dockerfile';
  private readonly buildah: string | null;
  private readonly shared: Workspace;
  private sharedIds = { signature: '', ids: new Map<string, string | null>() };
  /** Why overlay storage does not work here (null: it does), once found out. */
  private overlayProbe: Promise<string | null> | null = null;
  private overlayProbeFailedAt: number | null = null;

  constructor(private readonly options: BuildahOptions) {
    this.buildah = options.buildahPath === undefined ? findOnPath('buildah') : options.buildahPath;
    this.shared = { storage: options.storageRoot, driver: 'vfs', sandboxed: null };
  }

  get available(): boolean {
    return this.buildah !== null;
  }

  /** Any context with a Dockerfile is ours, buildah installed or not (then the build says what to install). */
  async accepts(contextDir: string): Promise<boolean> {
    for (const name of DOCKERFILE_NAMES) if (await contextHas(contextDir, name)) return true;
    return false;
  }

  /** Runs buildah on the workspace's storage; a non-zero exit fails the build with `what`. */
  private async buildahRun(
    ws: Workspace,
    args: string[],
    what: string,
    input: Pick<BuildInput, 'signal' | 'log'>,
    opts: RunChecked = {},
  ): Promise<CommandResult> {
    if (!this.buildah) throw new BuildError(BUILDAH_MISSING);
    return this.runChecked(ws, this.buildah, [...this.storageArgs(ws), ...args], what, input, opts);
  }

  /** Runs `file args` in the workspace; a failure or the deadline passed is a BuildError naming `what`. */
  private async runChecked(
    ws: Workspace,
    file: string,
    args: string[],
    what: string,
    input: Pick<BuildInput, 'signal' | 'log'>,
    opts: RunChecked,
  ): Promise<CommandResult> {
    const remaining = opts.deadline ? opts.deadline - Date.now() : undefined;
    if (remaining !== undefined && remaining <= 0) throw new BuildError(`build timed out during ${what}`, 'build_timeout');
    const result = await this.exec(ws, file, args, {
      signal: input.signal,
      timeoutMs: remaining,
      onLine: opts.onLine,
      writable: opts.writable,
      network: opts.network,
    });
    if (input.signal.aborted) throw new BuildError('build interrupted: the server is stopping');
    if (result.signal === 'SIGKILL' && opts.deadline && Date.now() >= opts.deadline)
      throw new BuildError(`build timed out during ${what}`, 'build_timeout');
    if (result.code !== 0) {
      if (!opts.onLine) for (const line of result.stderr.trim().split('\n').slice(-20)) input.log.line(line);
      throw new BuildError(`${what} failed (buildah exit code ${result.code ?? result.signal})`);
    }
    return result;
  }

  private storageArgs(ws: Workspace): string[] {
    return [
      '--root',
      join(ws.storage, STORAGE_DIRS[ws.driver]),
      '--runroot',
      join(ws.storage, ws.driver === 'vfs' ? 'run' : 'run-overlay'),
      '--storage-driver',
      ws.driver,
    ];
  }

  /** Runs a program in the workspace: in the application's sandbox when it has one, else as we are. */
  private async exec(
    ws: Workspace,
    file: string,
    args: string[],
    options: RunOptions & { writable?: string[]; mounts?: Array<{ source: string; target: string }>; network?: PushNetwork },
  ): Promise<CommandResult> {
    const { writable = [], mounts = [], network, ...runOptions } = options;
    if (!ws.sandboxed || !this.options.sandbox) return run(file, args, runOptions);
    const prepared = await this.options.sandbox.prepare({
      applicationId: ws.sandboxed.applicationId,
      name: `${ws.sandboxed.label}-${randomBytes(4).toString('hex')}`,
      command: [file, ...args].map(shellQuote).join(' '),
      view: { cwd: ws.sandboxed.cwd, writable: [...ws.sandboxed.writable, ...writable], mounts, mappedRoot: true },
      ...(network ? { network } : {}),
    });
    try {
      // TMPDIR in the workspace's storage: `RUN --mount=type=cache` directories live below it
      // (buildah-cache-0), kept between the builds of this application and cache scope only.
      const env = { ...SANDBOX_ENV, TMPDIR: ws.storage };
      const result = await runSandboxed(prepared, { ...runOptions, cwd: ws.sandboxed.cwd, env });
      await failIfOutOfMemory(prepared, result);
      return result;
    } finally {
      await prepared.cgroup.remove();
    }
  }

  /** The application's own workspace when sandboxed (failing closed when this machine cannot), else the shared one. */
  private async workspace(
    input: Pick<BuildInput, 'applicationId' | 'version' | 'cacheScope' | 'log'> & { contextDir?: string },
    scratch: string,
  ): Promise<Workspace> {
    const sandbox = this.options.sandbox;
    if (!sandbox) return this.shared;
    try {
      await sandbox.ready();
    } catch (err) {
      if (err instanceof SandboxUnavailable) throw new BuildError(`builds cannot run isolated: ${err.message}`);
      throw err;
    }
    // Layers are cached per application and cache scope: a preview's (thrown away after) never feeds an environment's build.
    const storage = cacheScopeDir(this.options.storageRoot, input.applicationId, input.cacheScope);
    return {
      storage,
      driver: await this.applicationDriver(storage, input, scratch),
      sandboxed: {
        applicationId: input.applicationId,
        label: `build-${input.applicationId}-${input.version}`,
        writable: [storage, ...(input.contextDir ? [input.contextDir] : []), scratch],
        cwd: scratch,
      },
    };
  }

  /**
   * `auto`: overlay when this machine mounts it inside a build's sandbox (Linux 5.11 or later on a
   * file system overlayfs can stack on), found out once by the first build (`buildah info` sets the
   * driver up, test mount included); vfs otherwise, said in that build's log.
   */
  private async applicationDriver(
    storage: string,
    input: Pick<BuildInput, 'applicationId' | 'version' | 'log'>,
    scratch: string,
  ): Promise<StorageDriver> {
    const setting = this.options.storageDriver ?? 'vfs';
    if (setting !== 'auto') return setting;
    // A failed probe ran in one application's storage (its leftovers, a passing fault): asked again after a while
    // instead of holding every application on vfs until a restart. A working overlay is remembered.
    if (this.overlayProbe && this.overlayProbeFailedAt !== null && Date.now() - this.overlayProbeFailedAt > OVERLAY_REPROBE_MS) {
      this.overlayProbe = null;
      this.overlayProbeFailedAt = null;
    }
    if (!this.overlayProbe) {
      const ws: Workspace = {
        storage,
        driver: 'overlay',
        sandboxed: {
          applicationId: input.applicationId,
          label: `probe-${input.applicationId}`,
          writable: [storage, scratch],
          cwd: scratch,
        },
      };
      this.overlayProbe = this.exec(ws, this.buildah!, [...this.storageArgs(ws), 'info'], { timeoutMs: 60_000 }).then(
        (r) => (r.code === 0 ? null : r.stderr.trim().split('\n').pop()?.slice(0, 300) || `buildah exit code ${r.code ?? r.signal}`),
        (err: Error) => err.message,
      );
    }
    const unavailable = await this.overlayProbe;
    if (unavailable === null) return 'overlay';
    this.overlayProbeFailedAt ??= Date.now();
    input.log.line(`Build storage: vfs (overlay storage does not work on this machine: ${unavailable})`);
    return 'vfs';
  }

  async build(input: BuildInput): Promise<BuildOutput> {
    if (!this.buildah) throw new BuildError(BUILDAH_MISSING);
    const started = Date.now();
    const deadline = started + input.timeoutMs;
    let dockerfileName: string | undefined;
    for (const name of DOCKERFILE_NAMES) if (!dockerfileName && (await contextHas(input.contextDir, name))) dockerfileName = name;
    const dockerfile = dockerfileName ? await readContextFile(input.contextDir, dockerfileName, MAX_DOCKERFILE_BYTES) : null;
    if (!dockerfileName || dockerfile === null) throw new BuildError('The build context has no Dockerfile');
    const secretValues = new Set(input.secrets);
    const argNames = Object.keys(input.buildEnv)
      .filter((n) => !secretValues.has(input.buildEnv[n]!))
      .sort();
    const secretNames = Object.keys(input.buildEnv)
      .filter((n) => secretValues.has(input.buildEnv[n]!))
      .sort();
    const localTag = `localhost/${input.repositoryName}:${input.version}`;
    const scratch = await mkdtemp(join(tmpdir(), 'slipway-buildah-'));
    try {
      // Build-time secrets: files only buildah reads, removed right after the build.
      const secretsDir = join(scratch, 'secrets');
      await mkdir(secretsDir, { mode: 0o700 });
      const secretArgs: string[] = [];
      for (const name of secretNames) {
        const file = join(secretsDir, name);
        await writeFile(file, input.buildEnv[name]!, { mode: 0o600 });
        secretArgs.push('--secret', `id=${name},src=${file}`);
      }
      const ws = await this.workspace(input, scratch);
      const bases = await this.sharedBaseImages(dockerfile);
      const iidFile = join(scratch, 'iid');
      input.log.line(
        `Building ${dockerfileName} with buildah${argNames.length ? `; build arguments: ${argNames.join(', ')}` : ''}${secretNames.length ? `; secrets: ${secretNames.join(', ')}` : ''}`,
      );
      let cachedSteps = 0;
      // One sandboxed script builds and exports: a sandbox (cgroup, setpriv, bubblewrap, user map)
      // per buildah command cost 30–70 ms each idle and far more loaded, for steps plain buildah never takes.
      const budArgs = [
        'bud',
        '--isolation',
        'chroot',
        '--layers',
        '--pull=false',
        '-f',
        join(input.contextDir, dockerfileName),
        '--iidfile',
        iidFile,
        '-t',
        localTag,
        ...argNames.flatMap((n) => ['--build-arg', `${n}=${input.buildEnv[n]}`]),
        ...secretArgs,
        input.contextDir,
      ];
      const stage = await this.stageArtifact(input.artifactDir);
      const target = await this.exportTarget(ws, stage.rootfs, scratch);
      const exportMark = `slipway-export-${randomBytes(8).toString('hex')}`;
      const containerMark = `${exportMark}-container`;
      const taggedLine = `Successfully tagged ${localTag}`;
      let exportStarted = 0;
      let throughContainer = false;
      const script = [
        // Sandboxed, the application's copy of each base image must be the operator's current one (else it is copied in first).
        ...(ws.sandboxed
          ? bases.map(
              ({ name, id }) =>
                `${this.baseListedScript(ws, name, id)}[ "$(${this.buildahCommand(ws, ['inspect', '--type', 'image', '--format', '{{.FromImageID}}', name])} 2>/dev/null)" = ${shellQuote(id)} ] || exit ${BASE_IMAGES_CHANGED}`,
            )
          : []),
        this.budThenExportScript(ws, budArgs, { localTag, iidFile, dir: scratch, rootfs: target.path, exportMark, containerMark }),
      ].join('\n');
      let config: ImageConfig;
      let inspected: InspectedImage;
      let artifact: ImageArtifact;
      try {
        // Per run of the script: the export starts as soon as bud has tagged the image (see budThenExportScript).
        const options = (stdin = new PassThrough()) => ({
          deadline,
          target,
          stdin,
          onLine: (line: string) => {
            if (line === taggedLine) stdin.write(`${EXPORT_NOW}\n`);
            if (line === exportMark) {
              if (exportStarted) return;
              exportStarted = Date.now();
              return input.log.enter?.('Export');
            }
            if (line === containerMark) return void (throughContainer = true);
            const step = /^STEP (\d+)\/(\d+)/.exec(line);
            if (step) input.log.substep(`${step[1]}/${step[2]}`);
            if (/^--> Using cache/.test(line)) cachedSteps++;
            // When each step began (seconds into the driver's build), so the build's time splits into its steps.
            return input.log.line(step ? `${line} (at ${((Date.now() - started) / 1000).toFixed(1)} s)` : line);
          },
        });
        // A cache scope's first build: its storage holds no image, so the bases are copied in before the script
        // runs, rather than after a first run that stops to ask for them (a sandbox and a buildah start fewer).
        if (ws.sandboxed && bases.length > 0 && (await this.holdsNoImage(ws)))
          await this.importBaseImages(ws, bases, input, deadline, { storageEmpty: true });
        if ((await this.runExport(ws, script, 'the Dockerfile build', input, options())) === 'base images changed') {
          await this.importBaseImages(ws, bases, input, deadline);
          if ((await this.runExport(ws, script, 'the Dockerfile build', input, options())) !== 'done')
            throw new BuildError("the base images could not be copied into this application's build storage");
        }
        inspected = await this.readInspected(scratch);
        config = inspected.OCIv1?.config ?? {};
        artifact = await this.finishArtifact(ws, stage.staging, input.artifactDir, config, input);
      } finally {
        await rm(stage.staging, { recursive: true, force: true }); // gone already unless we failed half-way
      }
      await rm(secretsDir, { recursive: true, force: true });
      // Written by the sandboxed buildah into a directory its build steps can write: read guarded, and only a digest passes.
      const imageId = `sha256:${(await readOutputFile(scratch, 'iid')).replace(/^sha256:/, '')}`;
      if (!/^sha256:[0-9a-f]{64}$/.test(imageId)) throw new BuildError('buildah wrote no valid image id');
      if (exportStarted)
        input.log.line(
          `Unpacked the image root file system into the artifact directory in ${seconds(Date.now() - exportStarted)}${throughContainer ? " (through a working container: the storage's layers could not be read)" : ''}`,
        );

      let pushed: { reference: string; digest: string } | null = null;
      if (this.options.registry) {
        input.log.enter?.('Push');
        pushed = await this.push(ws, imageId, input, this.options.registry, deadline);
        input.log.line(`Pushed ${pushed.reference}@${pushed.digest}`);
      }

      const processes = input.procfileProcesses ?? this.defaultProcesses(artifact);
      const exposed = Object.keys(config.ExposedPorts ?? {});
      return {
        artifactPath: input.artifactDir,
        imageId,
        dockerfile,
        imageMetadata: {
          builder: this.name,
          dockerfile_path: dockerfileName,
          local_reference: localTag,
          layers: inspected.OCIv1?.rootfs?.diff_ids?.length ?? 0,
          cached_steps: cachedSteps,
          workdir: artifact.workdir,
          entrypoint: artifact.entrypoint,
          cmd: artifact.cmd,
          user: config.User || null,
          exposed_ports: exposed,
          env_names: Object.keys(artifact.env).sort(),
          build_args: argNames,
          build_secrets: secretNames,
          ...(pushed ? { registry_reference: pushed.reference, manifest_digest: pushed.digest } : {}),
          build_seconds: Math.round((Date.now() - started) / 100) / 10,
        },
        processes,
      };
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  }

  /**
   * Takes an image from a registry as it is (no build): pulled by the application's sandboxed
   * buildah into its own storage (as a build would, so a hostile image's files are only ever
   * touched by the tenant's user), then unpacked into the artifact like a built image, and run
   * under the same walls. The reference is pinned by digest: what runs is what was resolved.
   */
  async pullImage(input: ImagePullInput): Promise<BuildOutput> {
    if (!this.buildah) throw new BuildError('Deploying an image needs buildah on the build machine: apt-get install buildah');
    const started = Date.now();
    const deadline = started + input.timeoutMs;
    const scratch = await mkdtemp(join(tmpdir(), 'slipway-pull-'));
    try {
      // Written before the workspace is made: its first sandbox (the storage probe) hands the fresh scratch
      // directory, this file included, to the application's user, and no tenant code has run in it yet.
      const authArgs: string[] = [];
      if (input.authFile !== null) {
        await writeFile(join(scratch, 'auth.json'), input.authFile, { mode: 0o600 });
        authArgs.push('--authfile', join(scratch, 'auth.json'));
      }
      const ws = await this.workspace(input, scratch);
      input.log.line(`Pulling ${input.reference}`);
      const pulled = await this.buildahRun(
        ws,
        ['pull', '--quiet', ...authArgs, ...(input.registry.insecure ? ['--tls-verify=false'] : []), `docker://${input.reference}`],
        `pulling ${input.reference}`,
        input,
        { deadline, network: await pushNetwork(input.registry) },
      );
      await rm(join(scratch, 'auth.json'), { force: true });
      const id = pulled.stdout.trim().split('\n').pop() ?? '';
      if (!/^(sha256:)?[0-9a-f]{64}$/.test(id)) throw new BuildError(`pulling ${input.reference} gave no image id`);
      const imageId = `sha256:${id.replace(/^sha256:/, '')}`;
      input.log.enter?.('Export');
      const stage = await this.stageArtifact(input.artifactDir);
      const target = await this.exportTarget(ws, stage.rootfs, scratch);
      let inspected: InspectedImage;
      let config: ImageConfig;
      let artifact: ImageArtifact;
      try {
        await this.runExport(ws, this.exportScript(ws, shellQuote(imageId), scratch, target.path), 'unpacking the image', input, {
          deadline,
          target,
        });
        inspected = await this.readInspected(scratch);
        config = inspected.OCIv1?.config ?? {};
        artifact = await this.finishArtifact(ws, stage.staging, input.artifactDir, config, input);
      } finally {
        await rm(stage.staging, { recursive: true, force: true });
      }
      input.log.line('Unpacked the image root file system into the artifact directory');
      const labels = boundedLabels(config.Labels);
      const declared = labelProcesses(labels);
      const processes = input.procfileProcesses ?? { ...(declared.web ? {} : this.defaultProcesses(artifact)), ...declared };
      await this.buildahRun(ws, ['rmi', imageId], 'removing the pulled image', input).catch(() => {}); // the artifact is what runs
      return {
        artifactPath: input.artifactDir,
        imageId,
        dockerfile: null,
        imageMetadata: {
          builder: 'image',
          source_image: input.reference,
          layers: inspected.OCIv1?.rootfs?.diff_ids?.length ?? 0,
          workdir: artifact.workdir,
          entrypoint: artifact.entrypoint,
          cmd: artifact.cmd,
          user: config.User || null,
          exposed_ports: Object.keys(config.ExposedPorts ?? {}),
          port: artifact.port ?? null,
          labels,
          env_names: Object.keys(artifact.env).sort(),
          build_seconds: Math.round((Date.now() - started) / 100) / 10,
        },
        processes,
      };
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  }

  /** Removes a scope's storage (sandboxed builds only: without a sandbox every build shares the one storage). */
  async discardCacheScope(applicationId: string, scope: CacheScope): Promise<void> {
    if (this.options.sandbox) await rm(cacheScopeDir(this.options.storageRoot, applicationId, scope), { recursive: true, force: true });
  }

  /**
   * Copies the operator's base images a sandboxed build names (`FROM`) from the shared
   * storage into the application's own, once per image version: exported by us (the shared
   * storage stays out of the sandbox's view), imported by the sandboxed buildah.
   */
  private async importBaseImages(
    ws: Workspace,
    bases: Array<{ name: string; id: string }>,
    input: BuildInput,
    deadline: number,
    { storageEmpty = false } = {},
  ) {
    if (!ws.sandboxed) return;
    for (const { name, id: shared } of bases) {
      if (!storageEmpty && (await this.imageIdOf(ws, name)) === shared) continue;
      const copyStarted = Date.now();
      // Written by root: into a directory of its own that no sandbox has seen (never below the build's
      // scratch directory, which the build's sandbox may already have written), given to the sandbox after.
      const holder = await mkdtemp(join(tmpdir(), 'slipway-base-'));
      const copy = join(holder, 'image');
      try {
        // A `dir:` copy keeps the layers uncompressed (an OCI layout gzips them): 25 % less time for a 700 MB base.
        await this.buildahRun(
          this.shared,
          ['push', '--quiet', '--disable-compression', shared, `dir:${copy}`],
          `exporting the base image ${name}`,
          input,
          { deadline },
        );
        await this.runChecked(ws, 'sh', ['-c', this.importScript(ws, copy, name)], `importing the base image ${name}`, input, {
          deadline,
          writable: [holder],
          network: { outbound: false },
        });
      } finally {
        await rm(holder, { recursive: true, force: true });
      }
      const why = storageEmpty ? 'its first build there' : "the operator's image changed, or the copy was missing";
      input.log.line(`Base image ${name} copied into this application's build storage in ${seconds(Date.now() - copyStarted)} (${why})`);
    }
  }

  /** Whether the workspace's storage holds no image yet: buildah writes its image list with the first one. */
  private async holdsNoImage(ws: Workspace): Promise<boolean> {
    try {
      return !(await existsBeneath(ws.storage, join(STORAGE_DIRS[ws.driver], `${ws.driver}-images`, 'images.json')));
    } catch (err) {
      // No storage yet holds no image; a link on the way is the sandboxed script's to find out.
      return (err as NodeJS.ErrnoException).code === 'ENOENT';
    }
  }

  /**
   * Shell commands, run in one sandbox (a sandbox and a buildah start-up fewer than one command
   * each), that import the image copied to `copy` (a `dir:` copy: the image comes in unnamed) and
   * name it `name`, as the Dockerfile's FROM says. A name pinned by digest is not a tag: the
   * image is found by its digest instead.
   */
  private importScript(ws: Workspace, copy: string, name: string): string {
    return [
      `id=$(${this.buildahCommand(ws, ['pull', '--quiet', `dir:${copy}`])}) || exit 1`,
      // The image's id is all `pull --quiet` prints; nothing else is ever named.
      `case "$id" in *[!0-9a-f]*|'') echo "buildah pull printed no image id" >&2; exit 1 ;; esac`,
      ...(name.includes('@') ? [] : [`${this.buildahCommand(ws, ['tag'])} "$id" ${shellQuote(name)}`]),
    ].join('\n');
  }

  /**
   * Garbage collection: removes one version's tag from the application's build storage (the
   * image goes with it once no other tag names it; layers a kept image shares stay). Runs as
   * the build does, inside the application's sandbox on its own storage, so the tenant's
   * files are touched only by the tenant's own process. Throws what buildah said when it refused.
   */
  async removeImage(applicationId: string, repositoryName: string, version: number): Promise<void> {
    if (!this.buildah) return;
    if (!this.options.sandbox) return this.removeImageFrom(this.shared, repositoryName, version);
    // The image sits in the storage of the cache scope it was built in (one per environment; the
    // application's storage itself before scopes): every storage of the application is asked.
    const appRoot = join(this.options.storageRoot, 'apps', applicationId);
    const scopes = (await isRealDirectory(join(appRoot, 'scopes'))) ? await readdir(join(appRoot, 'scopes')) : [];
    for (const storage of [appRoot, ...scopes.map((name) => join(appRoot, 'scopes', name))]) {
      // Only real directories: a link planted in a storage a build could once write is never followed.
      for (const driver of ['vfs', 'overlay'] as const) {
        if (!(await isRealDirectory(storage)) || !(await isRealDirectory(join(storage, STORAGE_DIRS[driver])))) continue;
        const scratch = await mkdtemp(join(tmpdir(), 'slipway-buildah-gc-'));
        try {
          const ws: Workspace = {
            storage,
            driver,
            sandboxed: { applicationId, label: `gc-${applicationId}-${version}`, writable: [storage, scratch], cwd: scratch },
          };
          await this.removeImageFrom(ws, repositoryName, version);
        } finally {
          await rm(scratch, { recursive: true, force: true });
        }
      }
    }
  }

  private async removeImageFrom(ws: Workspace, repositoryName: string, version: number): Promise<void> {
    const reference = `localhost/${repositoryName}:${version}`;
    const result = await this.exec(ws, this.buildah!, [...this.storageArgs(ws), 'rmi', reference], {});
    // Already gone (an earlier collection, a storage reset, another scope's storage) is what we wanted.
    if (result.code === 0 || /image not known|identifier is not an image|not found/i.test(result.stderr)) return;
    throw new Error(`buildah rmi ${reference} failed: ${result.stderr.trim().split('\n').slice(-3).join(' ')}`);
  }

  /** The operator's images a Dockerfile names that the shared storage holds, with their ids. */
  private async sharedBaseImages(dockerfile: string): Promise<Array<{ name: string; id: string }>> {
    const bases = [];
    for (const name of baseImageNames(dockerfile)) {
      const id = await this.sharedImageId(name);
      if (id) bases.push({ name, id });
    }
    return bases;
  }

  /**
   * An image's id in the shared storage, remembered while the storage's image list (rewritten
   * by buildah at every change: a new file) stays the same: one `buildah inspect` less per build.
   */
  private async sharedImageId(name: string): Promise<string | null> {
    const list = join(this.shared.storage, STORAGE_DIRS.vfs, 'vfs-images', 'images.json');
    const signature = await stat(list)
      .then((s) => `${s.ino}:${s.mtimeMs}:${s.size}`)
      .catch(() => '');
    if (signature !== this.sharedIds.signature) this.sharedIds = { signature, ids: new Map() };
    const known = this.sharedIds.ids.get(name);
    if (signature && known !== undefined) return known;
    const id = await this.imageIdOf(this.shared, name);
    if (signature) this.sharedIds.ids.set(name, id);
    return id;
  }

  /** The id of a local image, or null when the storage has no such image. */
  private async imageIdOf(ws: Workspace, name: string): Promise<string | null> {
    if (!this.buildah) return null;
    const result = await this.exec(
      ws,
      this.buildah,
      [...this.storageArgs(ws), 'inspect', '--type', 'image', '--format', '{{.FromImageID}}', name],
      // Reads the storage only: no way out needed (pasta's start spared).
      { network: { outbound: false } },
    );
    // An image id is 64 hex digits (`sha256:` before them, as FromImageID shows it): anything else names no image.
    const id = result.code === 0 ? result.stdout.trim() : '';
    return /^(sha256:)?[0-9a-f]{64}$/.test(id) ? id : null;
  }

  private buildahCommand(ws: Workspace, args: string[]): string {
    return [this.buildah!, ...this.storageArgs(ws), ...args].map(shellQuote).join(' ');
  }

  /**
   * Shell commands that run bud, then export the image it built into `rootfs`. The export
   * starts as soon as bud has tagged the image, while bud still removes its working container
   * (unmounting it, deleting its layer: as long as the copy itself on a busy machine): the
   * platform, seeing bud's "Successfully tagged" line, writes `export` to the script's standard
   * input, and a job waiting on it finds the image by its tag in the storage's image list and
   * copies it. Whoever first makes the claim directory exports: the job, or the script after bud
   * exits when the job was never told (a full log stops the lines) or found no such tag. The
   * job's image must be the one bud's `--iidfile` names (a build step can print the tag line
   * too, and an image from an earlier attempt of this version may hold the tag): else the build
   * fails. bud and its steps never read the standard input (`< /dev/null`). A bud that fails
   * ends the script, the waiting job with it (the sandbox's PID namespace ends).
   */
  private budThenExportScript(
    ws: Workspace,
    budArgs: string[],
    p: { localTag: string; iidFile: string; dir: string; rootfs: string; exportMark: string; containerMark: string },
  ): string {
    const claim = shellQuote(join(p.dir, 'export-claim'));
    const exported = shellQuote(join(p.dir, 'exported-id'));
    const iid = shellQuote(p.iidFile);
    const indent = (text: string) => text.replace(/^/gm, '  ');
    return [
      'exec 3<&0',
      `( IFS= read -r go && [ "$go" = ${EXPORT_NOW} ] && mkdir ${claim} 2>/dev/null || exit 0`,
      indent(this.taggedImageScript(ws, p.localTag)),
      `  echo "$id" > ${exported} || exit 201`,
      `  echo ${p.exportMark}`,
      indent(this.exportScript(ws, '"$id"', p.dir, p.rootfs, p.containerMark)),
      ') <&3 &',
      'exporter=$!',
      // bud's own failure keeps its code, but never one of the codes this script gives its own steps (199, 200+).
      `${this.buildahCommand(ws, budArgs)} < /dev/null 3<&- || { c=$?; [ "$c" -lt ${BASE_IMAGES_CHANGED} ] || c=1; exit "$c"; }`,
      `mkdir ${claim} 2>/dev/null && kill "$exporter" 2>/dev/null`,
      'wait "$exporter"; c=$?',
      `if [ -s ${exported} ]; then`,
      '  [ "$c" -eq 0 ] || exit "$c"',
      `  IFS= read -r built < ${exported}; IFS= read -r iid < ${iid}`,
      '  [ "$built" = "sha256:${iid#sha256:}" ] || exit 206',
      '  exit 0',
      'fi',
      `echo ${p.exportMark}`,
      this.exportScript(ws, `"$(cat ${iid})"`, p.dir, p.rootfs, p.containerMark),
    ].join('\n');
  }

  /**
   * A shell command that sets `id` (`sha256:…`) to the image the storage's image list names
   * `tag` (in its `names`, never `names-history`), or ends the job (exit 0) when none does.
   */
  private taggedImageScript(ws: Workspace, tag: string): string {
    const images = shellQuote(join(ws.storage, STORAGE_DIRS[ws.driver], `${ws.driver}-images`, 'images.json'));
    const pattern = `"id":"[0-9a-f]\\{64\\}"[^{}]*"names":\\[[^]]*"${tag.replace(/[.[\]*^$\\]/g, '\\$&')}"`;
    return [
      // A name belongs to one image at a time (tagging moves it): one match.
      `id=$(grep -o ${shellQuote(pattern)} ${images} 2>/dev/null)`,
      `id=\${id#'"id":"'}; id=\${id%%'"'*}`,
      `case "$id" in *[!0-9a-f]*|"") exit 0 ;; esac`,
      '[ ${#id} -eq 64 ] || exit 0',
      'id=sha256:$id',
    ].join('\n');
  }

  /**
   * Shell commands that copy an image's root file system into `rootfs` and write its
   * configuration to `<dir>/inspect.json`, then `cp -a` (owners, modes, links and special files
   * exactly as the image has them; sandboxed, as the image sees them, all owned by the
   * application's user outside). The copy reads the image's layers where the storage keeps them
   * (`layerSourceScript`); only when that fails does it take buildah's way (a working container,
   * its mount, the container removed on any exit), three buildah commands more. One process
   * mounts and copies: an overlay mount lives only in its mount namespace. Exit codes from 200
   * say which command failed.
   */
  private exportScript(ws: Workspace, imageExpr: string, dir: string, rootfs: string, fallbackMark?: string): string {
    const name = `slipway-export-${randomBytes(6).toString('hex')}`;
    return [
      `id=${imageExpr} || exit 201`,
      this.configScript(ws, shellQuote(join(dir, INSPECT_FILE))),
      this.layerSourceScript(ws, dir),
      `if [ -z "$m" ]; then`,
      ...(fallbackMark ? [`  echo ${fallbackMark}`] : []),
      `  ${this.buildahCommand(ws, ['from', '--pull=false', '--name', name])} "$id" > /dev/null || exit 203`,
      `  trap '${this.buildahCommand(ws, ['rm', name]).replaceAll("'", "'\\''")} > /dev/null 2>&1' EXIT`,
      `  m=$(${this.buildahCommand(ws, ['mount', name])}) || exit 204`,
      `fi`,
      `cp -a "$m/." ${shellQuote(rootfs)} || exit 205`,
    ].join('\n');
  }

  /**
   * Shell commands that write image `$id`'s configuration to `file` as `buildah inspect` shows
   * it (`{"OCIv1": …}`, the parts read): straight from the storage, which keeps the image's
   * configuration under its digest (the image's id) beside its manifest, else from `buildah
   * inspect` (one buildah command, 30–50 ms idle, far more loaded).
   */
  private configScript(ws: Workspace, file: string): string {
    const images = shellQuote(join(ws.storage, STORAGE_DIRS[ws.driver], `${ws.driver}-images`));
    return [
      'hex=${id#sha256:}; cfg=',
      `case "$hex" in *[!0-9a-f]*|"") ;; *) [ \${#hex} -ne 64 ] || cfg=${images}/"$hex"/="$(printf 'sha256:%s' "$hex" | base64 -w 0)" ;; esac`,
      `if [ -n "$cfg" ] && [ -f "$cfg" ]; then`,
      `  { printf '{"OCIv1":'; cat "$cfg"; printf '}'; } > ${file} || exit 202`,
      'else',
      `  ${this.buildahCommand(ws, ['inspect', '--type', 'image'])} "$id" > ${file} || exit 202`,
      'fi',
    ].join('\n');
  }

  /**
   * Shell commands that set `m` to a directory showing image `$id`'s root file system straight
   * from the storage's layers, without the working container buildah's `from` and `mount` make
   * and `rm` removes (each a buildah command: about a third of the export's time). The image's
   * top layer is read from the storage's image list: vfs keeps each layer whole
   * (`vfs/dir/<layer>`); overlay keeps its diff and the links to its lower layers, stacked here
   * read-only as buildah stacks them in a user namespace (`userxattr`). `m` stays empty when
   * anything is not as expected, and the export takes buildah's way.
   */
  private layerSourceScript(ws: Workspace, dir: string): string {
    const root = join(ws.storage, STORAGE_DIRS[ws.driver]);
    const images = shellQuote(join(root, `${ws.driver}-images`, 'images.json'));
    const lines = [
      'm=',
      // Go writes the image list compactly, its fields in a fixed order: the image's id, names, then its top layer.
      // An image is listed once: one match (no `head`: each command spared is a process less, 3–8 ms when loaded).
      `entry=$(grep -o '"id":"'"\${id#sha256:}"'"[^{}]*"layer":"[0-9a-f]\\{64\\}"' ${images} 2>/dev/null)`,
      `layer=\${entry##*'"layer":"'}; layer=\${layer%'"'}`,
      'case "$layer" in *[!0-9a-f]*|"") layer= ;; esac',
    ];
    if (ws.driver === 'vfs') {
      lines.push(
        `[ -n "$layer" ] && [ -d ${shellQuote(join(root, 'vfs', 'dir'))}/"$layer" ] && m=${shellQuote(join(root, 'vfs', 'dir'))}/"$layer"`,
      );
    } else {
      const layers = join(root, 'overlay');
      const merged = shellQuote(join(dir, 'merged'));
      lines.push(
        `if [ -n "$layer" ] && [ -d ${shellQuote(layers)}/"$layer"/diff ]; then`,
        // A bottom layer alone is the whole file system; above it, overlayfs stacks the diff on its lower layers' links (relative to the storage).
        `  if [ ! -s ${shellQuote(layers)}/"$layer"/lower ]; then m=${shellQuote(layers)}/"$layer"/diff`,
        `  elif lower= && { [ -d ${merged} ] || mkdir -p ${merged}; } && { IFS= read -r lower < ${shellQuote(layers)}/"$layer"/lower || [ -n "$lower" ]; } &&`,
        `    (cd ${shellQuote(layers)} && mount -t overlay -o "ro,userxattr,lowerdir=$layer/diff:$lower" overlay ${merged}) 2>/dev/null; then m=${merged}`,
        '  fi',
        'fi',
      );
    }
    return lines.join('\n');
  }

  /**
   * A shell test, followed by `||`, that passes without a buildah command when the storage's image
   * list shows the image `id` under `name` itself (its `names`, never its `names-history`: a name
   * that moved on). Only for a name with its registry (`localhost/…`, `host.tld/…`), whose full
   * form (`:latest` added) is what buildah stores; a short name, or any doubt, leaves the answer to
   * `buildah inspect` after the `||`. Under load each buildah command costs from 50 ms to a second.
   */
  private baseListedScript(ws: Workspace, name: string, id: string): string {
    if (!/^(localhost|[^/]*[.:][^/]*)\/[^@\s]+$/.test(name) || !/^[0-9a-f]{64}$/.test(id)) return '';
    const full = /:[^/]+$/.test(name) ? name : `${name}:latest`;
    const images = shellQuote(join(ws.storage, STORAGE_DIRS[ws.driver], `${ws.driver}-images`, 'images.json'));
    return `{ grep -o '"id":"${id}"[^{}]*"names":\\[[^]]*\\]' ${images} 2>/dev/null | grep -qF ${shellQuote(`"${full}"`)}; } || `;
  }

  /** Runs a build's or pull's script in the workspace; a failure names the buildah step or the export. */
  private async runExport(
    ws: Workspace,
    script: string,
    what: string,
    input: Pick<BuildInput, 'signal' | 'log'>,
    opts: { onLine?: (l: string) => void | boolean; deadline: number; target: ExportTarget; stdin?: PassThrough },
  ): Promise<'done' | 'base images changed'> {
    const remaining = opts.deadline - Date.now();
    if (remaining <= 0) throw new BuildError(`build timed out during ${what}`, 'build_timeout');
    let result: CommandResult;
    try {
      result = await this.exec(ws, 'sh', ['-c', script], {
        signal: input.signal,
        timeoutMs: remaining,
        onLine: opts.onLine,
        mounts: opts.target.mounts,
        ...(opts.stdin ? { stdin: opts.stdin } : {}),
      });
    } finally {
      opts.stdin?.end();
    }
    if (input.signal.aborted) throw new BuildError('build interrupted: the server is stopping');
    if (result.signal === 'SIGKILL' && Date.now() >= opts.deadline) throw new BuildError(`build timed out during ${what}`, 'build_timeout');
    if (result.code === 0) return 'done';
    if (result.code === BASE_IMAGES_CHANGED) return 'base images changed';
    const tail = result.stderr.trim().split('\n');
    if (result.code !== null && result.code >= 200) {
      throw new BuildError(`unpacking the image failed (${EXPORT_STEPS[result.code] ?? 'export'}): ${tail.slice(-3).join(' ')}`);
    }
    if (!opts.onLine) for (const line of tail.slice(-20)) input.log.line(line);
    throw new BuildError(`${what} failed (buildah exit code ${result.code ?? result.signal})`);
  }

  /** The image's configuration the export wrote, read without following a planted link and bounded. */
  private async readInspected(dir: string): Promise<InspectedImage> {
    let text: string | null;
    try {
      text = await readTextBeneath(dir, INSPECT_FILE, MAX_CAPTURED_STDOUT_BYTES);
    } catch (err) {
      if (err instanceof UnsafePathError) throw new BuildError(`buildah's output file ${err.message}`);
      throw err;
    }
    try {
      return JSON.parse(text ?? '') as InspectedImage;
    } catch {
      throw new BuildError('buildah wrote no readable image configuration');
    }
  }

  /**
   * The artifact's staging directory beside its final place: the platform's (0711), so the
   * sandboxed copy may write only `rootfs/`, and neither the manifest nor `rootfs` itself can be
   * planted or swapped by the image.
   */
  private async stageArtifact(artifactDir: string): Promise<{ staging: string; rootfs: string }> {
    const staging = `${artifactDir}.staging-${randomBytes(4).toString('hex')}`;
    await prepareArtifactDir(staging);
    const rootfs = join(staging, IMAGE_ROOTFS_DIR);
    await mkdir(rootfs, { mode: 0o700 });
    return { staging, rootfs };
  }

  /**
   * Where the export copies the root file system. Sandboxed, the staging `rootfs/` (the
   * application's user owns it, as before) is bound below the build's scratch directory: the
   * build never sees where artifacts live (DATA_DIR's `images/`), only its own scratch.
   */
  private async exportTarget(ws: Workspace, rootfs: string, scratch: string): Promise<ExportTarget> {
    if (!ws.sandboxed || !this.options.sandbox) return { path: rootfs, mounts: [] };
    const uid = await this.options.sandbox.uidOf(ws.sandboxed.applicationId);
    await chown(rootfs, uid, uid); // made by us a moment ago, in the platform's own staging directory
    const path = join(scratch, IMAGE_ROOTFS_DIR);
    await mkdir(path, { mode: 0o700 });
    return { path, mounts: [{ source: rootfs, target: path }] };
  }

  /** Writes the platform's manifest beside the copied root file system and moves the staging directory into place. */
  private async finishArtifact(
    ws: Workspace,
    staging: string,
    artifactDir: string,
    config: ImageConfig,
    input: UnpackInput,
  ): Promise<ImageArtifact> {
    const rootfs = join(staging, IMAGE_ROOTFS_DIR);
    // Sandboxed, the application's own user owns it (whatever USER it runs as inside): owner-only.
    // Unconfined, processes chroot into it as the image's USER, which must pass through `/`.
    if (ws.sandboxed) await chmodBeneath(staging, IMAGE_ROOTFS_DIR, 0o700);
    // A sandbox mounts a fresh /dev over the image's; only an unconfined chroot needs device nodes in the image.
    else await this.addDeviceNodes(staging, input);
    const env = Object.fromEntries(
      (config.Env ?? []).map((kv) => {
        const eq = kv.indexOf('=');
        return eq < 0 ? [kv, ''] : [kv.slice(0, eq), kv.slice(eq + 1)];
      }),
    );
    const stored: Omit<ImageArtifact, 'rootfs'> = {
      workdir: config.WorkingDir || '/',
      env,
      user: await numericUser(rootfs, config.User, input),
      entrypoint: config.Entrypoint ?? [],
      cmd: config.Cmd ?? [],
    };
    const port = exposedPort(config.ExposedPorts, config.Labels, (l) => input.log.line(l));
    if (port !== undefined) stored.port = port;
    await writeArtifactManifest(staging, { layout: 2, kind: 'image', ...stored });
    await rm(artifactDir, { recursive: true, force: true });
    await privateDir(join(artifactDir, '..'), 0o711);
    await rename(staging, artifactDir);
    return { ...stored, rootfs: join(artifactDir, IMAGE_ROOTFS_DIR) };
  }

  /**
   * Programs expect /dev/null and friends, which an image's /dev lacks until an engine
   * mounts them; unconfined (RUNTIME_ISOLATION=none, processes chroot into the image) we
   * create the few harmless character devices as root, in the image's own /dev only: a /dev
   * that is a symlink (or swapped for one) gets nothing, the nodes are made through the held
   * directory.
   */
  private async addDeviceNodes(staging: string, input: UnpackInput) {
    const devRel = `${IMAGE_ROOTFS_DIR}/dev`;
    let dev;
    try {
      if (!(await statBeneath(staging, devRel))) {
        const rootfs = await holdDirectoryBeneath(staging, IMAGE_ROOTFS_DIR);
        try {
          await mkdir(join(rootfs!.path, 'dev'), { mode: 0o755 });
        } finally {
          await rootfs?.close();
        }
      }
      dev = await holdDirectoryBeneath(staging, devRel);
    } catch (err) {
      if (!(err instanceof UnsafePathError)) throw err;
      input.log.line(`Note: the image's /dev is a symbolic link or not a directory: no device nodes were created in it`);
      return;
    }
    try {
      for (const [name, major, minor] of DEVICE_NODES) {
        if (await statBeneath(staging, `${devRel}/${name}`).catch(() => true)) continue;
        const made = await run('mknod', ['-m', '666', join(dev!.path, name), 'c', String(major), String(minor)]);
        if (made.code !== 0) {
          input.log.line(`Note: could not create /dev/${name} in the image root (${made.stderr.trim()})`);
          return;
        }
      }
    } finally {
      await dev?.close();
    }
  }

  /** Pushes with a credential the platform signs for itself, limited to this one repository. */
  private async push(ws: Workspace, imageId: string, input: BuildInput, registry: RegistryTarget, deadline: number) {
    const dir = await mkdtemp(join(tmpdir(), 'slipway-push-'));
    try {
      const authFile = join(dir, 'auth.json');
      await writeFile(
        authFile,
        await platformAuthFile(registry.keys, {
          issuer: registry.issuer,
          service: registry.service,
          registryHost: registry.host,
          repository: input.repositoryName,
        }),
        { mode: 0o600 },
      );
      await chmod(authFile, 0o600);
      const digestFile = join(dir, 'digest');
      const reference = `${registry.host}/${input.repositoryName}:${input.version}`;
      await this.buildahRun(
        ws,
        [
          'push',
          '--authfile',
          authFile,
          '--digestfile',
          digestFile,
          '--retry',
          '1',
          ...(registry.insecure ? ['--tls-verify=false'] : []),
          imageId,
          `docker://${reference}`,
        ],
        `pushing to ${reference}`,
        input,
        { deadline, onLine: (l) => input.log.line(l), writable: [dir], network: await pushNetwork(registry) },
      );
      const digest = await readOutputFile(dir, 'digest');
      if (!/^sha256:[0-9a-f]{64}$/.test(digest)) throw new BuildError(`pushing to ${reference} gave no valid manifest digest`);
      return { reference, digest };
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  private defaultProcesses(artifact: ImageArtifact) {
    const command = imageCommandLine(artifact.entrypoint, artifact.cmd);
    if (!command) throw new BuildError('The image has no CMD or ENTRYPOINT and the context has no Procfile: add one of them');
    return { web: { cmd: command, env: {} } };
  }
}

/** The network of a push: the platform's own command (no member code runs in it). */
type PushNetwork = { outbound: boolean; hostLoopbackPorts?: number[] };

/** How `runChecked` runs a command: its output lines, its deadline, what it may write, its network. */
type RunChecked = { onLine?: (l: string) => void; deadline?: number; writable?: string[]; network?: PushNetwork };

const isLoopbackHost = (hostname: string) => hostname === 'localhost' || /^127\./.test(hostname) || hostname === '[::1]';
const portOf = (url: URL) => Number(url.port) || (url.protocol === 'http:' ? 80 : 443);

/**
 * A push always goes out (to the platform's registry, whatever the organization's outbound
 * setting). The push's namespace has its own loopback, so a registry on this machine's loopback,
 * and the token service its challenge names when that is on loopback too (the platform's API),
 * are reached through their ports forwarded into it: nothing else of the host's loopback.
 */
export async function pushNetwork(registry: Pick<RegistryTarget, 'host' | 'insecure'>): Promise<PushNetwork> {
  const base = new URL(`${registry.insecure ? 'http' : 'https'}://${registry.host}`);
  const ports = new Set<number>();
  if (isLoopbackHost(base.hostname)) ports.add(portOf(base));
  const challenge = await fetch(new URL('/v2/', base), { signal: AbortSignal.timeout(5000) })
    .then((r) => r.headers.get('www-authenticate') ?? '')
    .catch(() => '');
  const realm = /realm="([^"]+)"/i.exec(challenge)?.[1];
  const realmUrl = realm && URL.canParse(realm) ? new URL(realm) : null;
  if (realmUrl && isLoopbackHost(realmUrl.hostname)) ports.add(portOf(realmUrl));
  return ports.size > 0 ? { outbound: true, hostLoopbackPorts: [...ports] } : { outbound: true };
}

/** The image's labels, bounded in count and length (they are shown in the image's detail). */
function boundedLabels(labels: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(labels ?? {}).slice(0, MAX_LABELS)) {
    if (typeof value === 'string') out[name.slice(0, MAX_LABEL_CHARS)] = value.slice(0, MAX_LABEL_CHARS);
  }
  return out;
}

/** Process types an image declares with `slipway.process.<type>=<command>` labels. */
function labelProcesses(labels: Record<string, string>) {
  const processes: Record<string, { cmd: string; env: Record<string, string> }> = {};
  for (const [name, value] of Object.entries(labels)) {
    const type = PROCESS_LABEL.exec(name)?.[1];
    if (type && value.trim()) processes[type] = { cmd: value.trim(), env: {} };
  }
  return processes;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

async function isRealDirectory(path: string): Promise<boolean> {
  return (await lstat(path).catch(() => null))?.isDirectory() === true;
}
