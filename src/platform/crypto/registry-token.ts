import { randomBytes } from 'node:crypto';
import type { JWTPayload } from 'jose';
import type { SigningKeys } from './signing-key.js';

/** One entry of a token's `access` claim: what may be done to one resource. */
export interface GrantedAccess {
  type: string;
  name: string;
  actions: string[];
}

export interface AccessTokenInput {
  issuer: string;
  /** The registry's `auth.token.service`: the token's audience. */
  service: string;
  subject: string;
  access: GrantedAccess[];
  expiresInSeconds: number;
  /** Issue time; tests pass one in the past to make expired tokens. */
  now?: Date;
}

/**
 * A registry bearer token (JWT) as `distribution` verifies it: signed with the platform key,
 * `kid` in libtrust form and the certificate in `x5c`, so a registry finds the key either
 * way in its `rootcertbundle`.
 */
export async function signAccessToken(keys: SigningKeys, input: AccessTokenInput) {
  const key = await keys.current();
  // jose loads with the first token (a build's push, a registry login), not with every control plane at rest.
  const { SignJWT } = await import('jose');
  const issuedAt = Math.floor((input.now ?? new Date()).getTime() / 1000);
  const token = await new SignJWT({ access: input.access })
    .setProtectedHeader({ alg: key.alg, typ: 'JWT', kid: key.kid, x5c: [key.certificateDer] })
    .setIssuer(input.issuer)
    .setSubject(input.subject)
    .setAudience(input.service)
    .setIssuedAt(issuedAt)
    .setNotBefore(issuedAt)
    .setExpirationTime(issuedAt + input.expiresInSeconds)
    .setJti(randomBytes(16).toString('base64url'))
    .sign(key.privateKey);
  return { token, issuedAt: new Date(issuedAt * 1000), expiresIn: input.expiresInSeconds };
}

/** Refresh tokens carry their own audience, so a registry never accepts one as an access token. */
const refreshAudience = (service: string) => `${service}#refresh`;

export interface RefreshTokenInput {
  issuer: string;
  service: string;
  subject: string;
  /** `key`: the API key id a user's token is tied to; `grant`: the fixed access of a platform token. */
  claims: { key: string } | { grant: GrantedAccess[] };
  expiresInSeconds: number;
  /** Issue time; tests pass one in the past to make expired tokens. */
  now?: Date;
}

/**
 * An OAuth2 refresh token for `POST /integrations/docker/auth` (`grant_type=refresh_token`):
 * what `docker login` keeps as its identity token, and what the platform's own pushes use
 * as the `identitytoken` of a containers auth file.
 */
export async function signRefreshToken(keys: SigningKeys, input: RefreshTokenInput): Promise<string> {
  const key = await keys.current();
  const { SignJWT } = await import('jose');
  const now = Math.floor((input.now ?? new Date()).getTime() / 1000);
  return new SignJWT({ ...input.claims })
    .setProtectedHeader({ alg: key.alg, typ: 'JWT', kid: key.kid })
    .setIssuer(input.issuer)
    .setSubject(input.subject)
    .setAudience(refreshAudience(input.service))
    .setIssuedAt(now)
    .setExpirationTime(now + input.expiresInSeconds)
    .setJti(randomBytes(16).toString('base64url'))
    .sign(key.privateKey);
}

/** The claims of a refresh token we signed (current or previous key), or null. */
export async function verifyRefreshToken(
  keys: SigningKeys,
  token: string,
  opts: { issuer: string; service: string },
): Promise<JWTPayload | null> {
  const candidates = await keys.verificationKeys();
  const { jwtVerify } = await import('jose');
  try {
    const { payload } = await jwtVerify(
      token,
      async (header) => {
        const found = candidates.find((k) => k.kid === header.kid);
        if (!found) throw new Error('unknown signing key');
        return found.publicKey;
      },
      { issuer: opts.issuer, audience: refreshAudience(opts.service) },
    );
    return payload;
  } catch {
    return null;
  }
}

/** How long the platform's own push credential lives: one build's push. */
const PLATFORM_GRANT_SECONDS = 30 * 60;

/**
 * A containers auth file (`buildah push --authfile`) that lets the platform push to one
 * repository: its `identitytoken` is a refresh token limited to that repository, so the
 * registry's token dance comes back to this platform and gets exactly that access.
 */
export async function platformAuthFile(
  keys: SigningKeys,
  opts: { issuer: string; service: string; registryHost: string; repository: string; actions?: string[] },
) {
  const token = await signRefreshToken(keys, {
    issuer: opts.issuer,
    service: opts.service,
    subject: 'slipway-builder',
    claims: { grant: [{ type: 'repository', name: opts.repository, actions: opts.actions ?? ['pull', 'push'] }] },
    expiresInSeconds: PLATFORM_GRANT_SECONDS,
  });
  return JSON.stringify({
    auths: { [opts.registryHost]: { auth: Buffer.from('slipway-builder:').toString('base64'), identitytoken: token } },
  });
}

/** The username of image pull secrets; the registry token service accepts any name. */
export const PULL_SECRET_USERNAME = 'slipway-pull';
/** How long a pull secret lives: the Kubernetes runtime re-creates it at each deployment and rollback. */
const PULL_SECRET_SECONDS = 30 * 24 * 3600;

/**
 * A Kubernetes image pull secret (`.dockerconfigjson`) for one repository. Its password is a
 * refresh token granting only `pull` there: the kubelet sends it as HTTP Basic to the token
 * endpoint the registry's challenge names, and gets exactly that access back.
 */
export async function registryPullSecret(
  keys: SigningKeys,
  opts: { issuer: string; service: string; registryHost: string; repository: string; ttlSeconds?: number; now?: Date },
) {
  const password = await signRefreshToken(keys, {
    issuer: opts.issuer,
    service: opts.service,
    subject: PULL_SECRET_USERNAME,
    claims: { grant: [{ type: 'repository', name: opts.repository, actions: ['pull'] }] },
    expiresInSeconds: opts.ttlSeconds ?? PULL_SECRET_SECONDS,
    now: opts.now,
  });
  const auth = Buffer.from(`${PULL_SECRET_USERNAME}:${password}`).toString('base64');
  return JSON.stringify({ auths: { [opts.registryHost]: { username: PULL_SECRET_USERNAME, password, auth } } });
}
