import { chmod, mkdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { ProcessDefinitions } from '../db/schema.js';
import { run } from '../git/command.js';
import { runSandboxed, SandboxUnavailable, type Sandbox } from '../sandbox/index.js';
import { chmodBeneath } from '../fs/beneath.js';
import { privateDir } from '../fs/private-dir.js';
import { contextHas, readContextFile } from './context-file.js';
import { prepareArtifactDir, shellQuote, SOURCE_TREE_DIR, writeArtifactManifest } from './image-artifact.js';
import { directoryDigest } from './digest.js';
import { failIfOutOfMemory } from './out-of-memory.js';
import { BuildError, cacheScopeDir, type BuildInput, type BuildOutput, type Builder, type CacheScope } from './port.js';
import { nodeFor, pythonFor, type Installation } from './runtime-versions.js';

/** slipway.json and package.json are read by the platform (as root): bounded. */
const MAX_MANIFEST_BYTES = 4 * 1024 * 1024;

interface BuildPlan {
  detected: 'slipway.json' | 'node' | 'python' | 'none';
  commands: Array<{ display: string; file: string; args: string[] }>;
  /** Processes to use when there is no Procfile. */
  defaultProcesses: ProcessDefinitions | null;
  /** Environment every process of this app needs (e.g. the virtualenv). */
  processEnv: Record<string, string>;
  /** The interpreter chosen for the build and its processes (`engines.node`, `.python-version`). */
  interpreter?: { name: 'node' | 'python'; installation: Installation; requested: string | null };
}

/**
 * Builds on this machine without a container engine: the snapshot itself becomes the
 * artifact, prepared the way a buildpack would (`npm ci` + `npm run build`, a Python
 * virtualenv with `pip install -r`, or the `build` command of `slipway.json`).
 * With a sandbox, every build command runs as the application's own user, seeing only the
 * build directory and the application's own caches (writable) and the system (read-only).
 */
export class SourceBuilder implements Builder {
  readonly name = 'source';

  constructor(
    private readonly cacheDir: string,
    private readonly sandbox: Sandbox | null = null,
    /** Folders of further Node installations (`BUILD_NODE_DIRS`) for `engines.node`. */
    private readonly nodeDirs: string[] = [],
  ) {}

  async accepts(): Promise<boolean> {
    return true;
  }

  async build(input: BuildInput): Promise<BuildOutput> {
    const started = Date.now();
    // The checkout becomes the artifact's `app/`, below a directory only the platform writes
    // (where its manifest goes); no tenant code has run on it yet, so it is the platform's to move.
    await prepareArtifactDir(input.artifactDir);
    const dir = join(input.artifactDir, SOURCE_TREE_DIR);
    await rename(input.contextDir, dir);
    await chmodBeneath(input.artifactDir, SOURCE_TREE_DIR, 0o700);
    const plan = await this.plan(dir);
    input.log.line(
      `Detected: ${plan.detected === 'none' ? 'no build needed (no slipway.json, package.json or requirements.txt)' : plan.detected}`,
    );
    if (plan.interpreter) {
      const { name, installation, requested } = plan.interpreter;
      const why =
        requested === null
          ? `none asked for (${name === 'node' ? '"engines.node"' : '.python-version'})`
          : `satisfies ${JSON.stringify(requested)}`;
      input.log.line(`Using ${name === 'node' ? 'Node' : 'Python'} ${installation.version} (${installation.executable}): ${why}`);
    }

    // Caches and HOME are per application and cache scope (the build's environment; a throwaway
    // one for a preview): no other tenant, and no less trusted build, writes what this one reads.
    const cacheDir = cacheScopeDir(this.cacheDir, input.applicationId, input.cacheScope);
    if (this.sandbox) {
      // Another application's user may pass through to its own cache, never list or read this one's.
      await privateDir(join(this.cacheDir, 'apps'), 0o711);
      await mkdir(cacheDir, { recursive: true, mode: 0o700 });
      // Its parents are the platform's: the path cannot have been swapped for a link.
      await chmod(cacheDir, 0o700);
    }
    const env = await this.buildEnvironment(cacheDir, input.buildEnv, plan.detected === 'node' ? plan.processEnv.PATH : undefined);
    const deadline = Date.now() + input.timeoutMs;
    for (const [i, command] of plan.commands.entries()) {
      input.log.substep(`${i + 1}/${plan.commands.length}`);
      input.log.line(`$ ${command.display}`);
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new BuildError(`build timed out after ${Math.round(input.timeoutMs / 1000)} s`, 'build_timeout');
      const result = await this.runCommand(command, input, dir, cacheDir, env, i, remaining);
      if (input.signal.aborted) throw new BuildError('build interrupted: the server is stopping');
      if (result.signal === 'SIGKILL' && Date.now() >= deadline)
        throw new BuildError(`build timed out after ${Math.round(input.timeoutMs / 1000)} s during "${command.display}"`, 'build_timeout');
      if (result.code !== 0) {
        throw new BuildError(
          `build command "${command.display}" failed with ${result.code === null ? `signal ${result.signal}` : `exit code ${result.code}`}`,
        );
      }
    }

    let processes = input.procfileProcesses ?? plan.defaultProcesses;
    if (!processes) {
      throw new BuildError('No Procfile in the build context: add one with at least a "web: <command>" line');
    }
    if (Object.keys(plan.processEnv).length > 0) {
      processes = Object.fromEntries(
        Object.entries(processes).map(([name, p]) => [name, { cmd: p.cmd, env: { ...plan.processEnv, ...p.env } }]),
      );
    }
    const digest = await directoryDigest(dir);
    await writeArtifactManifest(input.artifactDir, { layout: 2, kind: 'source' });
    return {
      artifactPath: input.artifactDir,
      imageId: digest.digest,
      // A context with a Dockerfile goes to buildah: one here was made by the build, and is not read.
      dockerfile: null,
      imageMetadata: {
        builder: this.name,
        detected: plan.detected,
        build_commands: plan.commands.map((c) => c.display),
        files: digest.files,
        size_bytes: digest.bytes,
        build_seconds: Math.round((Date.now() - started) / 100) / 10,
        ...(plan.interpreter && { [`${plan.interpreter.name}_version`]: plan.interpreter.installation.version }),
      },
      processes,
    };
  }

  async discardCacheScope(applicationId: string, scope: CacheScope): Promise<void> {
    await rm(cacheScopeDir(this.cacheDir, applicationId, scope), { recursive: true, force: true });
  }

  private async runCommand(
    command: BuildPlan['commands'][number],
    input: BuildInput,
    dir: string,
    cacheDir: string,
    env: NodeJS.ProcessEnv,
    index: number,
    timeoutMs: number,
  ) {
    const options = { cwd: dir, env, signal: input.signal, timeoutMs, onLine: (l: string) => input.log.line(l) };
    if (!this.sandbox) return run(command.file, command.args, options);
    try {
      await this.sandbox.ready();
    } catch (err) {
      if (err instanceof SandboxUnavailable) throw new BuildError(`builds cannot run isolated: ${err.message}`);
      throw err;
    }
    const sandbox = await this.sandbox.prepare({
      applicationId: input.applicationId,
      name: `build-${input.applicationId}-${input.version}-${index}`,
      command: [command.file, ...command.args].map(shellQuote).join(' '),
      view: { cwd: dir, writable: [dir, cacheDir] },
    });
    try {
      const result = await runSandboxed(sandbox, options);
      await failIfOutOfMemory(sandbox, result);
      return result;
    } finally {
      await sandbox.cgroup.remove();
    }
  }

  private async plan(dir: string): Promise<BuildPlan> {
    const has = (f: string) => contextHas(dir, f);
    const sh = (command: string) => ({ display: command, file: 'sh', args: ['-c', command] });
    const slipwayJson = await readContextFile(dir, 'slipway.json', MAX_MANIFEST_BYTES);
    if (slipwayJson !== null) {
      let manifest: { build?: unknown };
      try {
        manifest = JSON.parse(slipwayJson);
      } catch (err) {
        throw new BuildError(`slipway.json is not valid JSON: ${(err as Error).message}`);
      }
      if (manifest.build !== undefined) {
        if (typeof manifest.build !== 'string' || manifest.build.trim() === '')
          throw new BuildError('slipway.json: "build" must be a non-empty command string');
        return { detected: 'slipway.json', commands: [sh(manifest.build)], defaultProcesses: null, processEnv: {} };
      }
    }
    const packageJson = await readContextFile(dir, 'package.json', MAX_MANIFEST_BYTES);
    if (packageJson !== null) {
      let pkg: { scripts?: Record<string, string>; engines?: { node?: unknown } };
      try {
        pkg = JSON.parse(packageJson);
      } catch (err) {
        throw new BuildError(`package.json is not valid JSON: ${(err as Error).message}`);
      }
      const install =
        (await has('package-lock.json')) || (await has('npm-shrinkwrap.json'))
          ? { display: 'npm ci', file: 'npm', args: ['ci'] }
          : { display: 'npm install', file: 'npm', args: ['install'] };
      const commands = [install];
      if (pkg.scripts?.build) commands.push({ display: 'npm run build', file: 'npm', args: ['run', 'build'] });
      const defaultProcesses = pkg.scripts?.start ? { web: { cmd: 'npm start', env: {} } } : null;
      const requested = pkg.engines?.node;
      const node = await nodeFor(requested ?? '*', this.nodeDirs, this.sandbox !== null);
      return {
        detected: 'node',
        commands,
        defaultProcesses,
        // Another installation's bin folder goes first, for the build (npm of the same installation) and every process.
        processEnv: node.onPath ? {} : { PATH: `${node.binDir}:${systemPath()}` },
        interpreter: { name: 'node', installation: node, requested: requested === undefined ? null : String(requested) },
      };
    }
    if (await has('requirements.txt')) {
      const venv = join(dir, '.venv');
      const versionFile = await readContextFile(dir, '.python-version', 4096);
      const python = versionFile === null ? null : await pythonFor(versionFile, this.sandbox !== null);
      // The virtualenv is made by the asked-for Python; its bin folder then decides for every process.
      const venvPython = python?.executable ?? 'python3';
      const install = ['install', '--disable-pip-version-check', '-r', 'requirements.txt'];
      // The host's pip can install into a virtualenv made without one (pip >= 22.3), which
      // skips ensurepip: about 0.2 s instead of 10 s here.
      const commands = (await hostPipTargetsOtherPythons())
        ? [
            {
              display: `${python ? python.executable : 'python3'} -m venv --without-pip .venv`,
              file: venvPython,
              args: ['-m', 'venv', '--without-pip', '.venv'],
            },
            {
              display: 'pip install -r requirements.txt',
              file: 'python3',
              args: ['-m', 'pip', '--python', join(venv, 'bin', 'python'), ...install],
            },
          ]
        : [
            { display: `${python ? python.executable : 'python3'} -m venv .venv`, file: venvPython, args: ['-m', 'venv', '.venv'] },
            { display: 'pip install -r requirements.txt', file: join(venv, 'bin', 'pip'), args: install },
          ];
      return {
        detected: 'python',
        commands,
        defaultProcesses: null,
        processEnv: { VIRTUAL_ENV: venv, PATH: `${join(venv, 'bin')}:${systemPath()}` },
        ...(python && { interpreter: { name: 'python' as const, installation: python, requested: versionFile!.trim() } }),
      };
    }
    return { detected: 'none', commands: [], defaultProcesses: null, processEnv: {} };
  }

  /** Only what a build needs plus the build-time variables: never the platform's own environment. */
  private async buildEnvironment(cacheDir: string, buildEnv: Record<string, string>, path = systemPath()): Promise<NodeJS.ProcessEnv> {
    const home = join(cacheDir, 'home');
    await mkdir(home, { recursive: true });
    return {
      PATH: path,
      HOME: home,
      LANG: 'C.UTF-8',
      CI: 'true',
      npm_config_cache: join(cacheDir, 'npm'),
      npm_config_update_notifier: 'false',
      npm_config_fund: 'false',
      npm_config_audit: 'false',
      PIP_CACHE_DIR: join(cacheDir, 'pip'),
      ...buildEnv,
    };
  }
}

function systemPath(): string {
  return process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin';
}

let hostPip: Promise<boolean> | null = null;
/** Whether `python3 -m pip` exists and knows `--python` (pip 22.3 or later); asked once. */
function hostPipTargetsOtherPythons(): Promise<boolean> {
  hostPip ??= run('python3', ['-m', 'pip', '--version'], { timeoutMs: 30_000 })
    .then((r) => {
      const m = /^pip (\d+)\.(\d+)/.exec(r.stdout);
      return r.code === 0 && m !== null && (Number(m[1]) > 22 || (Number(m[1]) === 22 && Number(m[2]) >= 3));
    })
    .catch(() => false);
  return hostPip;
}
