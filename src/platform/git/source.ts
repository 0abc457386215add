import { PipelineFailure } from '../failures.js';
import { mkdir, rm } from 'node:fs/promises';
import { isAbsolute, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { run, type CommandResult } from './command.js';
import type { FetchPins } from './source-policy.js';

/** A failure the user can act on (missing ref, unreachable repository): its message is the record's `error_detail`. */
export class SourceError extends PipelineFailure {
  constructor(message: string) {
    super(message, 'source_unavailable');
  }
}

export interface SourceRequest {
  /** `owner/repo` (cloned from `githubUrl`), any git URL, or an absolute local path. */
  repository: string;
  /** Branch, tag, `refs/...` or commit (full or abbreviated). */
  ref: string;
  /** Build context inside the repository. */
  subdirectory?: string | null;
  githubUrl: string;
  /**
   * Roots that local repository paths (and `file://` addresses a user gives) must lie in;
   * unset allows any path. `GITHUB_URL` itself is the operator's choice and always allowed.
   */
  localRoots?: string[];
  /** What the source policy requires of the fetch (no redirects, the checked address); unset: no limits. */
  pins?: FetchPins;
  /** Access token for a private GitHub repository (sent as HTTP basic credentials; scrubbed). */
  token?: string;
  /** Empty scratch directory for the fetch; removed afterwards. */
  workDir: string;
  /** Where the snapshot of the build context is extracted. */
  destination: string;
  signal?: AbortSignal;
  onLine?: (line: string) => void;
  /** What logs and records call the repository instead of its address (the platform's own paths stay unsaid). */
  label?: string;
  /** Most bytes of files the extracted source may hold (SOURCE_MAX_MB); unset: no limit. */
  maxBytes?: number;
}

/** A blob's line of `git ls-tree -r -l`: mode, type, id, size, then a tab and the path. */
const BLOB_SIZE = /^[0-7]+ blob [0-9a-f]+ +(\d+)\t/;

export interface FetchedSource {
  commitSha: string;
  /** The repository address without credentials, for logs and records. */
  displayUrl: string;
}

const OWNER_REPO = /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/;
const HEX_REF = /^[0-9a-f]{7,40}$/i;

/** Turns `github_repository` into a fetchable address (without credentials). */
export function repositoryUrl(repository: string, githubUrl: string): string {
  const repo = repository.trim();
  // An address is a positional argument of git: one starting with '-' would be read as an
  // option (`--upload-pack=<command>` runs a command on this server).
  if (repo.startsWith('-')) throw new SourceError(`github_repository '${repository}' is not owner/repo, a git URL or an absolute path`);
  if (isAbsolute(repo)) return `file://${repo}`;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(repo) || /^[^/@\s]+@[^:\s]+:/.test(repo)) return repo;
  if (OWNER_REPO.test(repo)) {
    // `../x` would leave GITHUB_URL's folder when it is a file:// address.
    if (repo.split('/').some((part) => /^\.+$/.test(part)))
      throw new SourceError(`github_repository '${repository}' is not a valid owner/repo`);
    const base = githubUrl.replace(/\/+$/, '');
    return `${base}/${repo.replace(/\.git$/, '')}.git`;
  }
  throw new SourceError(`github_repository '${repository}' is not owner/repo, a git URL or an absolute path`);
}

/** Transports a repository address may use: never `ext::` (runs commands) or other remote helpers. */
const PROTOCOLS = [
  '-c',
  'protocol.allow=never',
  ...['https', 'http', 'ssh', 'git', 'file'].flatMap((p) => ['-c', `protocol.${p}.allow=always`]),
];

/**
 * git with no prompts, no system config, only plain transports, and nothing that could run
 * hooks from the fetched repository. A token travels as an HTTP header set through the
 * environment, never on the command line (where `ps` would show it).
 */
function git(
  args: string[],
  options: { cwd: string; signal?: AbortSignal; token?: string; pins?: FetchPins; onLine?: (line: string) => void },
): Promise<CommandResult> {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    GIT_TERMINAL_PROMPT: '0',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_ASKPASS: 'true',
    LANG: 'C',
  };
  if (options.token) {
    const basic = Buffer.from(`x-access-token:${options.token}`).toString('base64');
    Object.assign(env, {
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: 'http.extraHeader',
      GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}`,
    });
  }
  const pinned = options.pins
    ? [
        ...(options.pins.followRedirects ? [] : ['-c', 'http.followRedirects=false']),
        ...(options.pins.resolve ? ['-c', `http.curloptResolve=${options.pins.resolve}`] : []),
        ...(options.pins.ssh ? ['-c', `core.sshCommand=${pinnedSsh(options.pins.ssh)}`] : []),
      ]
    : [];
  return run('git', ['-c', 'core.hooksPath=/dev/null', '-c', 'advice.detachedHead=false', ...PROTOCOLS, ...pinned, ...args], {
    cwd: options.cwd,
    env,
    signal: options.signal,
    timeoutMs: 10 * 60_000,
    ...(options.onLine ? { onLine: options.onLine } : {}),
  });
}

/**
 * The ssh command of a pinned fetch (git runs it through a shell): connect to the address
 * the policy checked, verify the host key known for the name, and ignore the address check
 * against known_hosts (the name is what the key was recorded under).
 */
function pinnedSsh(pin: { host: string; address: string }): string {
  const quote = (value: string) => `'${value.replace(/'/g, `'\\''`)}'`;
  return `ssh -o HostName=${quote(pin.address)} -o HostKeyAlias=${quote(pin.host)} -o CheckHostIP=no`;
}

/** Whether a local repository path is inside one of the allowed roots (none configured: any path). */
function localPathAllowed(path: string, roots: string[] | undefined): boolean {
  if (!roots || roots.length === 0) return true;
  const target = resolve(path);
  return roots.some((root) => {
    const r = resolve(root);
    return target === r || target.startsWith(`${r}${sep}`);
  });
}

function lastLine(text: string, secrets: string[]): string {
  let line = text.trim().split('\n').filter(Boolean).pop() ?? '';
  for (const s of secrets) if (s) line = line.split(s).join('**secret**');
  return line.replace(/^fatal:\s*/, '');
}

/**
 * Fetches `ref` of the repository (shallow when the server allows), records the commit, and
 * extracts the tree of `subdirectory` at that commit into `destination`.
 */
/** The address as logs and records show it (no `user:password@`), and what was left out. */
export function withoutCredentials(url: string): { displayUrl: string; credentials: string[] } {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) return { displayUrl: url, credentials: [] };
  try {
    const parsed = new URL(url);
    if (!parsed.username && !parsed.password) return { displayUrl: url, credentials: [] };
    const credentials = [parsed.username, parsed.password].filter(Boolean).flatMap((c) => [c, decodeURIComponent(c)]);
    parsed.username = '';
    parsed.password = '';
    return { displayUrl: parsed.toString(), credentials: [...new Set(credentials)] };
  } catch {
    return { displayUrl: url, credentials: [] };
  }
}

export async function fetchSource(req: SourceRequest): Promise<FetchedSource> {
  // A ref is passed to git as an argument: never let one read as an option.
  if (!/^[A-Za-z0-9_][A-Za-z0-9._/-]*$/.test(req.ref) || req.ref.includes('..'))
    throw new SourceError(`ref '${req.ref}' is not a valid branch, tag or commit name`);
  const fetchUrl = repositoryUrl(req.repository, req.githubUrl);
  // Credentials written into the address (`https://user:token@host/…`) reach git only.
  const { displayUrl: address, credentials } = withoutCredentials(fetchUrl);
  const displayUrl = req.label ?? address;
  const fromGithubUrl = OWNER_REPO.test(req.repository.trim()) && !isAbsolute(req.repository.trim());
  if (address.startsWith('file://') && !fromGithubUrl && !localPathAllowed(fileURLToPath(address), req.localRoots)) {
    throw new SourceError(`local repository ${displayUrl} is outside the allowed roots (LOCAL_REPOSITORY_ROOTS)`);
  }
  const token = /^https?:\/\//.test(address) ? req.token : undefined;
  const secrets = [...(req.token ? [req.token] : []), ...credentials];
  const log = req.onLine ?? (() => {});
  const cwd = join(req.workDir, 'repo');
  await mkdir(cwd, { recursive: true });
  try {
    const init = await git(['init', '-q'], { cwd });
    if (init.code !== 0) throw new Error(`git init failed: ${init.stderr}`);

    log(`Fetching ${req.ref} from ${displayUrl}`);
    let fetched = await git(['fetch', '-q', '--depth', '1', '--no-tags', '--', fetchUrl, req.ref], {
      cwd,
      signal: req.signal,
      token,
      pins: req.pins,
    });
    let target = 'FETCH_HEAD';
    if (fetched.code !== 0 && HEX_REF.test(req.ref)) {
      // An abbreviated commit cannot be asked for by name: fetch the branches and tags, then look it up.
      fetched = await git(['fetch', '-q', '--no-tags', '--', fetchUrl, '+refs/heads/*:refs/remotes/origin/*', '+refs/tags/*:refs/tags/*'], {
        cwd,
        signal: req.signal,
        token,
        pins: req.pins,
      });
      target = req.ref;
    }
    if (req.signal?.aborted) throw new SourceError('interrupted while fetching the source');
    if (fetched.code !== 0) {
      // A member's address on someone else's host: what answered (refused, timed out, 404) stays unsaid.
      if (req.pins && !req.pins.followRedirects) throw new SourceError(`could not fetch ref '${req.ref}' from ${displayUrl}`);
      const reason = lastLine(fetched.stderr, secrets);
      if (/couldn't find remote ref|not our ref|unadvertised object|no such remote ref/i.test(fetched.stderr)) {
        throw new SourceError(`ref '${req.ref}' was not found in ${displayUrl}`);
      }
      throw new SourceError(`could not fetch ${displayUrl}: ${reason}`);
    }
    const resolved = await git(['rev-parse', '--verify', '--quiet', `${target}^{commit}`], { cwd });
    if (resolved.code !== 0) throw new SourceError(`ref '${req.ref}' was not found in ${displayUrl}`);
    const commitSha = resolved.stdout.trim();
    log(`Commit ${commitSha}`);

    const subdirectory = (req.subdirectory ?? '').replace(/^\/+|\/+$/g, '');
    const treeish = subdirectory ? `${commitSha}:${subdirectory}` : `${commitSha}^{tree}`;
    const tree = await git(['cat-file', '-t', treeish], { cwd });
    if (tree.code !== 0 || tree.stdout.trim() !== 'tree')
      throw new SourceError(`subdirectory '${subdirectory}' does not exist at commit ${commitSha.slice(0, 12)}`);

    if (req.maxBytes !== undefined) {
      // Sizes come from the objects' headers: nothing is inflated to count them.
      let total = 0;
      const listed = await git(['ls-tree', '-r', '-l', treeish], {
        cwd,
        signal: req.signal,
        onLine: (line) => {
          const size = BLOB_SIZE.exec(line);
          if (size) total += Number(size[1]);
        },
      });
      if (listed.code !== 0) throw new Error(`git ls-tree failed: ${lastLine(listed.stderr, secrets)}`);
      if (total > req.maxBytes)
        throw new SourceError(
          `the source at commit ${commitSha.slice(0, 12)} holds ${total} bytes of files, more than this server builds (${req.maxBytes} bytes, SOURCE_MAX_MB)`,
        );
    }
    const archive = join(req.workDir, 'source.tar');
    const archived = await git(['archive', '--format=tar', '-o', archive, treeish], { cwd, signal: req.signal });
    if (archived.code !== 0) throw new Error(`git archive failed: ${lastLine(archived.stderr, secrets)}`);
    await mkdir(req.destination, { recursive: true });
    const extracted = await run('tar', ['-xf', archive, '-C', req.destination, '--no-same-owner'], { signal: req.signal });
    if (extracted.code !== 0) throw new Error(`extracting the source failed: ${extracted.stderr.trim()}`);
    return { commitSha, displayUrl };
  } finally {
    await rm(cwd, { recursive: true, force: true });
    await rm(join(req.workDir, 'source.tar'), { force: true });
  }
}
