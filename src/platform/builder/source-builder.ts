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
import { chooseGo, choosePython, goDirective, pyprojectDependencies, staticServer } from './runtimes.js';
import { BuildError, cacheScopeDir, type BuildInput, type BuildOutput, type Builder, type CacheScope } from './port.js';
import { nodeFor, pythonFor, type Installation } from './runtime-versions.js';
import { dependencyCacheFor, restoreCommand, saveCommand, type DependencyCache, type DependencyInputs } from './dependency-cache.js';

/** Where a Go build puts the application's binary, inside its tree. */
const GO_BINARY = '.slipway/app';
/** Output directories of static site generators, in the order they are looked for. */
const STATIC_OUTPUTS = ['dist', 'build', 'out', 'public'];
/** slipway.json and package.json are read by the platform (as root): bounded. */
const MAX_MANIFEST_BYTES = 4 * 1024 * 1024;

interface BuildPlan {
  detected: 'slipway.json' | 'node' | 'python' | 'go' | 'static' | 'procfile' | 'none';
  /** Why this plan was chosen (the file that decided it, the runtime version taken), printed at the top of the build. */
  why: string;
  commands: Array<{ display: string; file: string; args: string[] }>;
  /** How many of the first commands install the dependencies (skipped when a saved install is reused). */
  installCommands: number;
  /** What keys the saved install (no lockfile: none, the install always runs). */
  dependencies: Omit<DependencyInputs, 'buildEnv'> | null;
  /** Processes to use when there is no Procfile. */
  defaultProcesses: ProcessDefinitions | null;
  /** Environment every process of this app needs (e.g. the virtualenv). */
  processEnv: Record<string, string>;
  /** A site built by `npm run build` without a server: the first of these holding an index.html is served as files. */
  staticOutputs?: string[];
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
  readonly chosenBecause = 'no Dockerfile: the language is detected from the files';

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
    input.log.line(`Detected: ${plan.detected}: ${plan.why}`);
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
    const dependencies = plan.dependencies ? await dependencyCacheFor(dir, { ...plan.dependencies, buildEnv: input.buildEnv }) : null;
    let reused = false;
    if (dependencies && 'key' in dependencies) {
      const restore = { display: 'restore dependencies', file: 'sh', args: ['-c', restoreCommand(cacheDir, dependencies, dir)] };
      const commandStarted = Date.now();
      const result = await this.runCommand(restore, input, dir, cacheDir, env, 'restore', deadline - Date.now());
      if (input.signal.aborted) throw new BuildError('build interrupted: the server is stopping');
      reused = result.code === 0;
      input.log.line(
        reused
          ? `dependencies: reused (lockfile unchanged: ${dependencies.lockfiles.join(', ')}) in ${seconds(Date.now() - commandStarted)}`
          : `dependencies: installing (no saved install for this ${dependencies.lockfiles.join(', ')})`,
      );
    } else if (dependencies && plan.installCommands > 0) {
      input.log.line(`dependencies: installing (${dependencies.none}: nothing to key a saved install on)`);
    }
    for (const [i, command] of plan.commands.entries()) {
      if (reused && i < plan.installCommands) continue;
      input.log.substep(`${i + 1}/${plan.commands.length}`);
      input.log.line(`$ ${command.display}`);
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new BuildError(`build timed out after ${Math.round(input.timeoutMs / 1000)} s`, 'build_timeout');
      const commandStarted = Date.now();
      const result = await this.runCommand(command, input, dir, cacheDir, env, i, remaining);
      if (input.signal.aborted) throw new BuildError('build interrupted: the server is stopping');
      if (result.signal === 'SIGKILL' && Date.now() >= deadline)
        throw new BuildError(`build timed out after ${Math.round(input.timeoutMs / 1000)} s during "${command.display}"`, 'build_timeout');
      if (result.code !== 0) {
        throw new BuildError(
          `build command "${command.display}" failed with ${result.code === null ? `signal ${result.signal}` : `exit code ${result.code}`}`,
        );
      }
      input.log.line(`(${command.display}: ${seconds(Date.now() - commandStarted)})`);
      if (i === plan.installCommands - 1 && dependencies) {
        input.log.line('dependencies: installed');
        if ('key' in dependencies) await this.saveDependencies(dependencies, input, dir, cacheDir, env, deadline);
      }
    }

    let processes = input.procfileProcesses ?? plan.defaultProcesses ?? (await this.staticOutput(dir, plan, input));
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

  /** The web process serving a built static site's output directory (see `staticOutputs`), or null. */
  private async staticOutput(dir: string, plan: BuildPlan, input: BuildInput): Promise<ProcessDefinitions | null> {
    for (const out of plan.staticOutputs ?? []) {
      if (!(await contextHas(dir, `${out}/index.html`))) continue;
      const server = await staticServer(out);
      if (!server) return null;
      input.log.line(`No start script: ${out}/index.html, the build's output, is served as files by ${server.name}`);
      return { web: { cmd: server.cmd, env: {} } };
    }
    return null;
  }

  /** Keeps the fresh install for the next build; a failed save only costs that build an install. */
  private async saveDependencies(
    dependencies: DependencyCache,
    input: BuildInput,
    dir: string,
    cacheDir: string,
    env: NodeJS.ProcessEnv,
    deadline: number,
  ) {
    const started = Date.now();
    const save = { display: 'save dependencies', file: 'sh', args: ['-c', saveCommand(cacheDir, dependencies, dir)] };
    const result = await this.runCommand(save, input, dir, cacheDir, env, 'save', deadline - Date.now());
    if (input.signal.aborted) throw new BuildError('build interrupted: the server is stopping');
    input.log.line(
      result.code === 0
        ? `dependencies: saved for the next build in ${seconds(Date.now() - started)}`
        : `dependencies: could not be saved for the next build (exit code ${result.code ?? result.signal})`,
    );
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
    index: number | string,
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
        return {
          detected: 'slipway.json',
          why: 'slipway.json names a build command',
          commands: [sh(manifest.build)],
          installCommands: 0,
          dependencies: null,
          defaultProcesses: null,
          processEnv: {},
        };
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
      // A `build` script and no `start`: a static site generator; its output directory is served.
      const staticOutputs = pkg.scripts?.build && !pkg.scripts?.start ? STATIC_OUTPUTS : undefined;
      const requested = pkg.engines?.node;
      const node = await nodeFor(requested ?? '*', this.nodeDirs, this.sandbox !== null);
      return {
        detected: 'node',
        why: 'package.json is present',
        commands,
        installCommands: 1,
        dependencies: {
          lockfiles: NODE_LOCKFILES,
          settings: ['.npmrc'],
          // What of package.json changes an install besides the lockfile (a mismatch `npm ci` would refuse re-installs too).
          facts: [
            node.version,
            install.display,
            ...NODE_INSTALL_FIELDS.map((f) => (pkg as Record<string, unknown>)[f] ?? null),
            ...NODE_INSTALL_SCRIPTS.map((s) => pkg.scripts?.[s] ?? null),
          ],
          tree: 'node_modules',
        },
        defaultProcesses,
        // Another installation's bin folder goes first, for the build (npm of the same installation) and every process.
        processEnv: node.onPath ? {} : { PATH: `${node.binDir}:${systemPath()}` },
        staticOutputs,
        interpreter: { name: 'node', installation: node, requested: requested === undefined ? null : String(requested) },
      };
    }
    const pyproject = await readContextFile(dir, 'pyproject.toml', MAX_MANIFEST_BYTES);
    if ((await has('requirements.txt')) || pyproject !== null) return this.pythonPlan(dir, pyproject);
    const goMod = await readContextFile(dir, 'go.mod', MAX_MANIFEST_BYTES);
    if (goMod !== null) {
      const toolchain = await chooseGo(goMod);
      const binary = join(dir, GO_BINARY);
      return {
        detected: 'go',
        why: `go.mod is present; Go ${toolchain.version}${goDirective(goMod) ? ` (go.mod asks for ${goDirective(goMod)})` : ''}`,
        commands: [{ display: `go build -o ${GO_BINARY} .`, file: toolchain.file, args: ['build', '-o', binary, '.'] }],
        installCommands: 0,
        dependencies: null,
        defaultProcesses: { web: { cmd: `./${GO_BINARY}`, env: {} } },
        processEnv: {},
      };
    }
    if (await has('Procfile')) {
      return {
        detected: 'procfile',
        why: 'no language detected: the Procfile runs as it is',
        commands: [],
        installCommands: 0,
        dependencies: null,
        defaultProcesses: null,
        processEnv: {},
      };
    }
    if (await has('index.html')) {
      const server = await staticServer('.');
      if (!server) throw new BuildError('A static site needs busybox or python3 on the machine to serve it: apt-get install busybox');
      return {
        detected: 'static',
        why: `index.html is present and no package.json, requirements.txt, pyproject.toml, go.mod or Procfile: served as files by ${server.name}`,
        commands: [],
        installCommands: 0,
        dependencies: null,
        defaultProcesses: { web: { cmd: server.cmd, env: {} } },
        processEnv: {},
      };
    }
    return {
      detected: 'none',
      why: 'no slipway.json, package.json, requirements.txt, pyproject.toml, go.mod, index.html or Procfile',
      commands: [],
      installCommands: 0,
      dependencies: null,
      defaultProcesses: null,
      processEnv: {},
    };
  }

  /**
   * A virtualenv made with the Python `.python-version` asks for (else the newest), with
   * requirements.txt or pyproject.toml's `[project] dependencies` installed into it (the
   * project itself runs from the tree). Without a Procfile, `web` runs main.py or app.py.
   */
  private async pythonPlan(dir: string, pyproject: string | null): Promise<BuildPlan> {
    const has = (f: string) => contextHas(dir, f);
    const requested = (await readContextFile(dir, '.python-version', 1024))?.trim().split(/\s+/)[0] || null;
    // The asked-for version among what the sandbox sees (runtime-versions.ts), else the newest python3.
    const asked = requested ? await pythonFor(requested, this.sandbox !== null) : null;
    const python = asked ? { version: asked.version, file: asked.executable } : await choosePython(null);
    const venv = join(dir, '.venv');
    const fromRequirements = await has('requirements.txt');
    const dependencies = fromRequirements ? [] : pyprojectDependencies(pyproject ?? '');
    const what = fromRequirements ? ['-r', 'requirements.txt'] : dependencies;
    const install = ['install', '--disable-pip-version-check', ...what];
    const shown = fromRequirements ? 'pip install -r requirements.txt' : `pip install ${dependencies.join(' ')}`;
    // The host's pip can install into a virtualenv made without one (pip >= 22.3), which
    // skips ensurepip: about 0.2 s instead of 10 s here.
    const hostPip = await hostPipTargetsOtherPythons();
    const commands: BuildPlan['commands'] = [
      hostPip
        ? { display: `python${python.version} -m venv --without-pip .venv`, file: python.file, args: ['-m', 'venv', '--without-pip', venv] }
        : { display: `python${python.version} -m venv .venv`, file: python.file, args: ['-m', 'venv', venv] },
    ];
    if (what.length > 0) {
      commands.push(
        hostPip
          ? { display: shown, file: 'python3', args: ['-m', 'pip', '--python', join(venv, 'bin', 'python'), ...install] }
          : { display: shown, file: join(venv, 'bin', 'pip'), args: install },
      );
    }
    const entry = (await has('main.py')) ? 'main.py' : (await has('app.py')) ? 'app.py' : null;
    return {
      detected: 'python',
      why:
        `${fromRequirements ? 'requirements.txt' : 'pyproject.toml'} is present; Python ${python.version}` +
        (requested ? ` (.python-version asks for ${requested})` : ''),
      commands,
      installCommands: commands.length,
      // The virtualenv is what requirements.txt (or pyproject.toml's dependencies) and the interpreter decide.
      dependencies:
        what.length > 0
          ? {
              lockfiles: fromRequirements ? ['requirements.txt'] : ['pyproject.toml'],
              facts: [python.version, python.file, commands.map((c) => c.display), dependencies],
              tree: '.venv',
            }
          : null,
      defaultProcesses: entry ? { web: { cmd: `python ${entry}`, env: {} } } : null,
      processEnv: { VIRTUAL_ENV: venv, PATH: `${join(venv, 'bin')}:${systemPath()}` },
      ...(asked && { interpreter: { name: 'python' as const, installation: asked, requested } }),
    };
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
      // Go: caches in the scope's directory, never another toolchain downloaded, no C compiler needed (a build variable may change it).
      GOPATH: join(cacheDir, 'go'),
      GOCACHE: join(cacheDir, 'go-build'),
      GOTOOLCHAIN: 'local',
      CGO_ENABLED: '0',
      ...buildEnv,
    };
  }
}

/** Lockfiles an npm install follows (npm reads yarn.lock too); any of them present keys the saved install. */
const NODE_LOCKFILES = ['package-lock.json', 'npm-shrinkwrap.json', 'yarn.lock', 'pnpm-lock.yaml'];
/** Fields of package.json that change what an install produces. */
const NODE_INSTALL_FIELDS = [
  'dependencies',
  'devDependencies',
  'optionalDependencies',
  'peerDependencies',
  'bundleDependencies',
  'overrides',
  'workspaces',
];
/** Scripts npm runs during the install. */
const NODE_INSTALL_SCRIPTS = ['preinstall', 'install', 'postinstall', 'prepare'];

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

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
