import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { run } from '../git/command.js';
import { BuildError } from './port.js';

/**
 * The language runtimes this build machine has, for the source builder to honour what an
 * application asks for (`.python-version`, go.mod's `go` directive) or refuse it naming what
 * exists. Only the system's directories are looked at: a sandboxed build sees those, never a
 * user's own installs (a pyenv in /root).
 */
const SYSTEM_BIN_DIRS = ['/usr/local/bin', '/usr/bin', '/bin'];
const VERSION = /^\d+\.\d+(?:\.\d+)?$/;

export interface Runtime {
  /** Absolute path of the interpreter or toolchain. */
  file: string;
  version: string;
}

let pythons: Promise<Runtime[]> | null = null;
/** Every `python3.N` of the system directories, newest first (asked once per process). */
export function pythonRuntimes(): Promise<Runtime[]> {
  pythons ??= (async () => {
    const found: Runtime[] = [];
    for (const dir of SYSTEM_BIN_DIRS) {
      const names = existsSync(dir) ? readdirSync(dir).filter((n) => /^python3\.\d+$/.test(n)) : [];
      for (const name of names) {
        const file = join(dir, name);
        const r = await run(file, ['-c', 'import platform; print(platform.python_version())'], { timeoutMs: 15_000 }).catch(() => null);
        const version = r?.code === 0 ? r.stdout.trim() : '';
        if (VERSION.test(version) && !found.some((f) => f.version === version)) found.push({ file, version });
      }
    }
    return found.sort((a, b) => compareVersions(b.version, a.version));
  })();
  return pythons;
}

let go: Promise<Runtime | null> | null = null;
/** The system's Go toolchain, or null when none is installed. */
export function goRuntime(): Promise<Runtime | null> {
  go ??= (async () => {
    const file = SYSTEM_BIN_DIRS.map((d) => join(d, 'go')).find((f) => existsSync(f));
    if (!file) return null;
    const r = await run(file, ['env', 'GOVERSION'], { timeoutMs: 15_000 }).catch(() => null);
    const version = r?.code === 0 ? r.stdout.trim().replace(/^go/, '') : '';
    return VERSION.test(version) ? { file, version } : null;
  })();
  return go;
}

/** -1, 0 or 1 comparing dotted versions numerically (missing parts count as 0). */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  return 0;
}

/**
 * The Python a `.python-version` asks for (`3.11`, `3.11.7`, `python-3.11`): the system's
 * interpreter of that version, else a build error listing the versions there are. Without a
 * request: the newest.
 */
export async function choosePython(requested: string | null): Promise<Runtime> {
  const available = await pythonRuntimes();
  if (available.length === 0) throw new BuildError('This Python application needs python3 on the build machine: apt-get install python3');
  if (requested === null) return available[0]!;
  const wanted = requested.replace(/^python-?/i, '');
  if (!/^\d+(?:\.\d+){0,2}$/.test(wanted))
    throw new BuildError(`.python-version: "${requested.slice(0, 40)}" is not a version like 3, 3.11 or 3.11.7`);
  const match = available.find((p) => p.version === wanted || p.version.startsWith(`${wanted}.`));
  if (!match) {
    throw new BuildError(
      `.python-version asks for Python ${wanted}; this build machine has ${available.map((p) => p.version).join(', ')}: ` +
        'name one of them in .python-version (or remove the file)',
    );
  }
  return match;
}

/** The `go` directive of a go.mod (`go 1.21`), or null when it has none. */
export function goDirective(goMod: string): string | null {
  return /^go\s+(\d+\.\d+(?:\.\d+)?)\s*$/m.exec(goMod)?.[1] ?? null;
}

/** The Go toolchain for a go.mod: present and at least its `go` version, else a build error saying what there is. */
export async function chooseGo(goMod: string): Promise<Runtime> {
  const toolchain = await goRuntime();
  if (!toolchain) {
    throw new BuildError('The build context has a go.mod, but the build machine has no Go toolchain: apt-get install golang-go');
  }
  const wanted = goDirective(goMod);
  if (wanted && compareVersions(wanted, toolchain.version) > 0) {
    throw new BuildError(
      `go.mod asks for Go ${wanted}; this build machine has Go ${toolchain.version}: lower the go directive to ${toolchain.version} ` +
        'or ask the operator for a newer Go',
    );
  }
  return toolchain;
}

/**
 * The `[project] dependencies` of a pyproject.toml (PEP 621): the strings of its array. Only
 * this key is read (no TOML library): a file that hides it in another form installs nothing.
 */
export function pyprojectDependencies(text: string): string[] {
  const table = /^\[project\]\s*$([\s\S]*?)(?=^\[|(?![\s\S]))/m.exec(text)?.[1] ?? '';
  const array = /^dependencies\s*=\s*\[([\s\S]*?)\]/m.exec(table)?.[1];
  if (array === undefined) return [];
  return [...array.matchAll(/"((?:[^"\\]|\\.)*)"|'([^']*)'/g)].map((m) => (m[1] ?? m[2] ?? '').trim()).filter(Boolean);
}

/** A static file server of `root` (a fixed relative name) for a site without a server of its own: busybox httpd, else Python's; null when neither is installed. */
export async function staticServer(root: string): Promise<{ name: string; cmd: string } | null> {
  const busybox = SYSTEM_BIN_DIRS.map((d) => join(d, 'busybox')).find((f) => existsSync(f));
  if (busybox) return { name: 'busybox httpd', cmd: `${busybox} httpd -f -p 127.0.0.1:$PORT -h ${root}` };
  const python = (await pythonRuntimes())[0];
  if (python) return { name: 'python http.server', cmd: `${python.file} -m http.server --bind 127.0.0.1 --directory ${root} $PORT` };
  return null;
}
