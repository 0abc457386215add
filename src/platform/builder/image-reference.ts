import { createHash } from 'node:crypto';
import type { Config } from '../../config.js';
import { platformAuthFile, signAccessToken } from '../crypto/registry-token.js';
import { registryTarget } from './registry-target.js';

/** An image reference `host[:port]/name[:tag][@sha256:…]` taken apart. */
export interface ImageReference {
  host: string;
  /** Repository path, e.g. `acme/web/api`. */
  name: string;
  tag: string | null;
  digest: string | null;
}

/** Where a reference's registry is, and whether this platform may pull from it. */
export interface PullRegistry {
  host: string;
  insecure: boolean;
  /** The platform's registry (REGISTRY_URL): pulled with a token it signs itself. */
  own: boolean;
}

const NAME_COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
const DIGEST = /^sha256:[0-9a-f]{64}$/;
const HOST = /^[A-Za-z0-9.-]+(?::\d{1,5})?$|^\[[0-9a-fA-F:]+\](?::\d{1,5})?$/;
const MAX_REFERENCE = 512;

/**
 * Parses a reference the way container engines do: the first path component is a registry
 * host when it has a `.` or a `:` or is `localhost`; without one, `defaultHost` (the
 * platform's registry). Null when it is not a valid reference.
 */
export function parseImageReference(text: string, defaultHost: string | null): ImageReference | null {
  if (text.length === 0 || text.length > MAX_REFERENCE || /\s/.test(text)) return null;
  let rest = text;
  let digest: string | null = null;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST.test(digest)) return null;
  }
  const slash = rest.indexOf('/');
  const first = slash < 0 ? '' : rest.slice(0, slash);
  let host: string | null;
  if (slash >= 0 && (first.includes('.') || first.includes(':') || first === 'localhost')) {
    host = first;
    rest = rest.slice(slash + 1);
  } else {
    host = defaultHost;
  }
  if (!host || !HOST.test(host)) return null;
  let tag: string | null = null;
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!TAG.test(tag)) return null;
  }
  if (!rest || !rest.split('/').every((c) => NAME_COMPONENT.test(c))) return null;
  if (!tag && !digest) tag = 'latest';
  return { host: host.toLowerCase(), name: rest, tag, digest };
}

/** The reference pinned by a digest, as a release records it. */
export const pinnedReference = (ref: Pick<ImageReference, 'host' | 'name'>, digest: string) => `${ref.host}/${ref.name}@${digest}`;

/** The registries images may be pulled from: the platform's own, then IMAGE_PULL_REGISTRIES. */
export function pullRegistries(config: Config): PullRegistry[] {
  const own = registryTarget(config);
  const list: PullRegistry[] = own ? [{ host: own.host.toLowerCase(), insecure: own.insecure, own: true }] : [];
  for (const entry of (config.IMAGE_PULL_REGISTRIES ?? '').split(',').map((e) => e.trim())) {
    const text = /^[a-z]+:\/\//i.test(entry) ? entry : `https://${entry}`;
    // An entry that is no host names no registry (the setting's description says the form).
    if (!entry || !URL.canParse(text)) continue;
    const url = new URL(text);
    const host = url.host.toLowerCase();
    if (!list.some((r) => r.host === host)) list.push({ host, insecure: url.protocol === 'http:', own: false });
  }
  return list;
}

/** Credentials for a registry's token service or Basic auth. */
export interface RegistryCredentials {
  username: string;
  password: string;
}

export class RegistryLookupError extends Error {}

const MANIFEST_TYPES = [
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.oci.image.manifest.v1+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
  'application/vnd.docker.distribution.manifest.v2+json',
].join(', ');
const LOOKUP_TIMEOUT_MS = 15_000;
/** A manifest is read only when the registry names no digest: bounded. */
const MAX_MANIFEST_BYTES = 4 * 1024 * 1024;
const MAX_TOKEN_BYTES = 64 * 1024;

/**
 * The manifest digest a reference names now (`sha256:…`), asked of its registry (the
 * Distribution API: `HEAD /v2/<name>/manifests/<tag>`), or null when the registry has no such
 * image. Authenticates as a registry asks: `bearer` (a token we signed) for the platform's
 * registry, else the token service of its challenge (or Basic) with `credentials`.
 */
export async function manifestDigest(
  registry: PullRegistry,
  ref: ImageReference,
  auth: { bearer?: string; credentials?: RegistryCredentials | null },
): Promise<string | null> {
  const base = `${registry.insecure ? 'http' : 'https'}://${registry.host}`;
  const url = `${base}/v2/${ref.name}/manifests/${ref.digest ?? ref.tag}`;
  const ask = (authorization: string | null, method = 'HEAD') =>
    fetch(url, {
      method,
      redirect: 'follow',
      headers: { accept: MANIFEST_TYPES, ...(authorization ? { authorization } : {}) },
      signal: AbortSignal.timeout(LOOKUP_TIMEOUT_MS),
    });
  let authorization = auth.bearer ? `Bearer ${auth.bearer}` : null;
  let res = await ask(authorization).catch((err: Error) => {
    throw new RegistryLookupError(`the registry ${registry.host} could not be reached (${err.message})`);
  });
  if (res.status === 401 && !auth.bearer) {
    authorization = await challengeAuthorization(res.headers.get('www-authenticate') ?? '', auth.credentials ?? null);
    if (authorization) res = await ask(authorization);
  }
  if (res.status === 404) return null;
  if (res.status === 401 || res.status === 403) {
    // Distribution answers an unknown repository like a forbidden one: the caller cannot tell them apart either.
    return null;
  }
  if (!res.ok) throw new RegistryLookupError(`the registry ${registry.host} answered ${res.status} for ${ref.name}`);
  const named = res.headers.get('docker-content-digest');
  if (named && DIGEST.test(named)) return named;
  const body = await ask(authorization, 'GET');
  const bytes = await boundedBody(body, MAX_MANIFEST_BYTES);
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

/** `Bearer` from the challenge's token service (anonymous, or Basic with the credentials), or Basic itself. */
async function challengeAuthorization(challenge: string, credentials: RegistryCredentials | null): Promise<string | null> {
  const basic = credentials ? `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}` : null;
  if (/^basic/i.test(challenge)) return basic;
  if (!/^bearer/i.test(challenge)) return null;
  const params = Object.fromEntries([...challenge.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!.toLowerCase(), m[2]!]));
  if (!params.realm || !URL.canParse(params.realm)) return null;
  const tokenUrl = new URL(params.realm);
  if (params.service) tokenUrl.searchParams.set('service', params.service);
  if (params.scope) tokenUrl.searchParams.set('scope', params.scope);
  const res = await fetch(tokenUrl, {
    headers: basic ? { authorization: basic } : {},
    signal: AbortSignal.timeout(LOOKUP_TIMEOUT_MS),
  }).catch(() => null);
  if (!res?.ok) return null;
  const body = JSON.parse((await boundedBody(res, MAX_TOKEN_BYTES)).toString('utf8')) as { token?: string; access_token?: string };
  const token = body.token ?? body.access_token;
  return typeof token === 'string' ? `Bearer ${token}` : null;
}

async function boundedBody(res: Response, max: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body ?? []) {
    size += (chunk as Uint8Array).length;
    if (size > max) throw new RegistryLookupError(`the registry's answer is larger than ${max} bytes`);
    chunks.push(Buffer.from(chunk as Uint8Array));
  }
  return Buffer.concat(chunks);
}

/** A short-lived pull token for one repository of the platform's registry, signed by the platform. */
export async function ownPullToken(config: Config, repository: string): Promise<string | null> {
  const target = registryTarget(config);
  if (!target) return null;
  const signed = await signAccessToken(target.keys, {
    issuer: target.issuer,
    service: target.service,
    subject: 'slipway-platform',
    access: [{ type: 'repository', name: repository, actions: ['pull'] }],
    expiresInSeconds: 120,
  });
  return signed.token;
}

/**
 * The containers auth file a pull of `ref` uses: for the platform's registry a pull-only
 * grant on that one repository signed by the platform; for another registry the member's
 * credentials (opened only for this pull); null to pull anonymously.
 */
export async function pullAuthFile(
  config: Config,
  registry: PullRegistry,
  ref: Pick<ImageReference, 'name'>,
  credentials: RegistryCredentials | null,
): Promise<string | null> {
  const own = registry.own ? registryTarget(config) : null;
  if (own) {
    return platformAuthFile(own.keys, {
      issuer: own.issuer,
      service: own.service,
      registryHost: own.host,
      repository: ref.name,
      actions: ['pull'],
    });
  }
  if (!credentials) return null;
  const auth = Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64');
  return JSON.stringify({ auths: { [registry.host]: { auth } } });
}
