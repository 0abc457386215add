import { realpathSync } from 'node:fs';
import { lookup } from 'node:dns/promises';
import { isAbsolute, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isPublicAddress } from '../net/public-address.js';
import { repositoryUrl, SourceError } from './source.js';

/**
 * Which repositories a user may build from (issue 10). Anyone: `owner/repo` on GITHUB_URL
 * (and full addresses on GITHUB_URL's own origin), and http(s)/ssh git URLs whose host
 * resolves only to public addresses. Local paths and `file://`: site administrators, or
 * anyone inside SOURCE_PATH_ALLOWLIST. Administrators may use any address.
 */
export interface SourcePolicyConfig {
  GITHUB_URL: string;
  /** Comma-separated folders every user may build from. */
  SOURCE_PATH_ALLOWLIST?: string | undefined;
}

/** Refused by the policy: the message is the same whatever answered (or did not). */
export class SourceRefused extends SourceError {}

export const REFUSED_ADDRESS =
  'github_repository must be owner/repo or an http(s) or ssh git URL of a public host, reachable from this server';
export const REFUSED_LOCAL =
  'github_repository: local paths and file:// addresses are for site administrators (or inside SOURCE_PATH_ALLOWLIST)';

/** What a permitted network fetch must respect: no redirects, and the address checked now. */
export interface FetchPins {
  followRedirects: boolean;
  /** `host:port:address` for curl (git's http.curloptResolve): git connects where we checked. */
  resolve?: string;
  /** ssh: connect to `address` (ssh's HostName), checking the host key recorded for `host` (HostKeyAlias). */
  ssh?: { host: string; address: string };
}

type Kind = { kind: 'github' } | { kind: 'local'; path: string } | { kind: 'remote'; url: URL | null; host: string; scheme: string };

const OWNER_REPO = /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/;
const SCP_LIKE = /^(?:[^@/\s]+@)?([^:/\s]+):(?!\/\/)/;

function classify(repository: string, githubUrl: string): Kind {
  const repo = repository.trim();
  const address = repositoryUrl(repo, githubUrl); // throws SourceError on what git must never see
  if (OWNER_REPO.test(repo) && !isAbsolute(repo)) return { kind: 'github' };
  if (address.startsWith('file://')) return { kind: 'local', path: fileURLToPath(address) };
  const scp = SCP_LIKE.exec(repo);
  if (scp && !/^[a-z][a-z0-9+.-]*:\/\//i.test(repo)) return { kind: 'remote', url: null, host: scp[1]!, scheme: 'ssh' };
  let url: URL;
  try {
    url = new URL(address);
  } catch {
    throw new SourceRefused(REFUSED_ADDRESS);
  }
  return { kind: 'remote', url, host: url.hostname.replace(/^\[|\]$/g, ''), scheme: url.protocol.replace(/:$/, '') };
}

/** Whether a local path lies inside one of the folders (symlinks resolved: no way out through a link). */
export function insideFolders(path: string, folders: string[]): boolean {
  const real = (p: string) => {
    try {
      return realpathSync(p);
    } catch {
      return resolve(p);
    }
  };
  const target = real(path);
  return folders.some((folder) => {
    const root = real(folder);
    return target === root || target.startsWith(root.endsWith(sep) ? root : `${root}${sep}`);
  });
}

function allowlist(config: SourcePolicyConfig): string[] {
  return (config.SOURCE_PATH_ALLOWLIST ?? '')
    .split(',')
    .map((f) => f.trim())
    .filter(Boolean);
}

function sameOrigin(url: URL | null, githubUrl: string): boolean {
  if (!url || !/^https?:$/.test(url.protocol)) return false; // other schemes' origin is the opaque "null"
  try {
    return new URL(githubUrl).origin === url.origin;
  } catch {
    return false;
  }
}

/**
 * Checks a repository for a user who is not a site administrator; resolves what a network
 * fetch must be pinned to. Throws SourceRefused (generic text) or SourceError (bad syntax).
 */
export async function checkMemberSource(repository: string, config: SourcePolicyConfig): Promise<FetchPins> {
  const source = classify(repository, config.GITHUB_URL);
  if (source.kind === 'github') return { followRedirects: true };
  if (source.kind === 'local') {
    if (insideFolders(source.path, allowlist(config))) return { followRedirects: true };
    throw new SourceRefused(REFUSED_LOCAL);
  }
  if (sameOrigin(source.url, config.GITHUB_URL)) return { followRedirects: true };
  if (!['http', 'https', 'ssh'].includes(source.scheme) || !source.host) throw new SourceRefused(REFUSED_ADDRESS);
  let addresses: Array<{ address: string }>;
  try {
    addresses = await lookup(source.host, { all: true, verbatim: true });
  } catch {
    throw new SourceRefused(REFUSED_ADDRESS);
  }
  if (addresses.length === 0 || !addresses.every((a) => isPublicAddress(a.address))) throw new SourceRefused(REFUSED_ADDRESS);
  const first = addresses[0]!.address;
  // ssh would resolve the name again (DNS rebinding): it connects to the address checked now.
  if (!source.url || source.scheme === 'ssh') return { followRedirects: false, ssh: { host: source.host, address: first } };
  const port = source.url.port || (source.scheme === 'https' ? '443' : '80');
  return { followRedirects: false, resolve: `${source.url.hostname}:${port}:${first.includes(':') ? `[${first}]` : first}` };
}

/** Checks a repository on save: administrators may use any address git can fetch; others as above. */
export async function checkSourceOnSave(repository: string | null | undefined, admin: boolean, config: SourcePolicyConfig): Promise<void> {
  if (!repository) return;
  if (admin) {
    repositoryUrl(repository, config.GITHUB_URL);
    return;
  }
  await checkMemberSource(repository, config);
}
