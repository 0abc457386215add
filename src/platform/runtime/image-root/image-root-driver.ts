import { ArtifactRefused, resolveArtifact, shellQuote, type ImageArtifact } from '../../builder/image-artifact.js';
import { RolloutFailure } from '../application-runtime.js';
import type {
  AdoptionRecord,
  ExecProcess,
  ExecRequest,
  InstanceSpec,
  InstanceOutput,
  InstanceStatus,
  LeftoverInstance,
  OneOffResult,
  OneOffSpec,
  ProcessRoot,
  ResourceUsage,
  RuntimeDriver,
} from '../port.js';

const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const CHROOT = '/usr/sbin/chroot';

/**
 * The command that runs `command` inside an image's root file system: `chroot` into it,
 * as the image's numeric USER, in its WORKDIR, with its PATH. A container engine would
 * isolate more; this machine has none that works (see machine notes), and the router
 * reaches the process on loopback exactly as it does a source build's.
 */
export function chrootCommand(image: ImageArtifact, command: string): string {
  // The command may be a whole script (`a && b; c`): it runs as given, after the cd.
  const inside = `cd ${shellQuote(image.workdir)} || exit 126\n${command}`;
  const userspec = image.user
    ? ` ${shellQuote(`--userspec=${image.user.includes(':') ? image.user : `${image.user}:${image.user}`}`)}`
    : '';
  return `exec ${CHROOT}${userspec} ${shellQuote(image.rootfs)} /bin/sh -c ${shellQuote(inside)}`;
}

/** The image's root for a sandboxing driver: bound as `/`, USER seen inside (outside: the app's sandbox user). */
export function processRoot(image: ImageArtifact): ProcessRoot {
  const [uid, gid] = (image.user ?? '0').split(':').map(Number);
  return { rootfs: image.rootfs, workdir: image.workdir || '/', user: { uid: uid ?? 0, gid: gid ?? uid ?? 0 } };
}

/** The image's ENV below the release's configuration; PATH for inside the image. */
export function imageEnv(image: ImageArtifact, env: Record<string, string>): Record<string, string> {
  return { PATH: DEFAULT_PATH, ...image.env, ...env };
}

/**
 * A runtime driver variant for container image builds: a release whose artifact is an
 * unpacked image (the platform's `slipway-artifact.json` + `rootfs/`, see image-artifact.ts)
 * runs its processes inside that root file system; a source build's run in its `app/` tree.
 * A sandboxing inner driver gets the root as `root` (bubblewrap binds it as `/`, the same
 * walls as a source build's processes); an unconfined one gets a `chroot` command.
 * Everything else (restarts, ports, stats, reaping) is the wrapped driver's.
 */
export class ImageRootDriver implements RuntimeDriver {
  readonly name: string;
  readonly sandboxed: boolean;

  constructor(private readonly inner: RuntimeDriver) {
    this.name = `${inner.name}+image-root`;
    this.sandboxed = inner.sandboxed === true;
  }

  /**
   * Where the process runs, decided by what the platform wrote beside the tenant's tree (see
   * image-artifact.ts): a source tree becomes the working directory, an image root the
   * process's root. An artifact that could have been forged is refused with what to do.
   */
  private async translate<T extends { command: string; artifactPath: string; env: Record<string, string> }>(spec: T): Promise<T> {
    let artifact;
    try {
      artifact = await resolveArtifact(spec.artifactPath);
    } catch (err) {
      if (err instanceof ArtifactRefused) throw new RolloutFailure(`Cannot run this release: ${err.message}`);
      throw err;
    }
    if (artifact.kind === 'source') return { ...spec, artifactPath: artifact.dir };
    const { image } = artifact;
    if (this.sandboxed) {
      // Its own network namespace: the image's EXPOSE port is free there, the host's port is forwarded to it.
      const listenPort = image.port !== undefined && (spec as { listen?: boolean }).listen ? { listenPort: image.port } : {};
      return { ...spec, root: processRoot(image), env: imageEnv(image, spec.env), ...listenPort };
    }
    return { ...spec, command: chrootCommand(image, spec.command), env: imageEnv(image, spec.env) };
  }

  async start(spec: InstanceSpec): Promise<InstanceStatus> {
    return this.inner.start(await this.translate(spec));
  }

  exec(id: string, request: ExecRequest): Promise<ExecProcess> {
    if (!this.inner.exec) throw new Error(`the ${this.inner.name} runtime cannot run commands inside instances`);
    return this.inner.exec(id, request);
  }

  async runOnce(spec: OneOffSpec): Promise<OneOffResult> {
    return this.inner.runOnce(await this.translate(spec));
  }

  stop(id: string): Promise<void> {
    return this.inner.stop(id);
  }
  status(id: string): InstanceStatus | undefined {
    return this.inner.status(id);
  }
  list(): InstanceStatus[] {
    return this.inner.list();
  }
  usage(): Promise<Map<string, ResourceUsage>> {
    return this.inner.usage();
  }
  onChange(listener: (status: InstanceStatus) => void): void {
    this.inner.onChange(listener);
  }
  onOutput(listener: (output: InstanceOutput) => void): void {
    this.inner.onOutput(listener);
  }
  async adoptable(record: AdoptionRecord): Promise<boolean> {
    return (await this.inner.adoptable?.(record)) ?? false;
  }

  async adopt(spec: InstanceSpec, record: AdoptionRecord): Promise<InstanceStatus | null> {
    return (await this.inner.adopt?.(await this.translate(spec), record)) ?? null;
  }

  listening(id: string): Promise<{ ports: number[] | null; checked: string }> {
    return this.inner.listening?.(id) ?? Promise.resolve({ ports: null, checked: 'this runtime cannot look at listening sockets' });
  }

  startTicksOf(id: string): string | null {
    return this.inner.startTicksOf?.(id) ?? null;
  }

  async detach(): Promise<void> {
    await this.inner.detach?.();
  }

  reap(leftovers: LeftoverInstance[]): Promise<void> {
    return this.inner.reap(leftovers);
  }
  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }
}
