import { createPrivateKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';

export interface GitHubAppSettings {
  GITHUB_APP_ID?: string;
  GITHUB_APP_PRIVATE_KEY?: string;
  GITHUB_APP_PRIVATE_KEY_FILE?: string;
  GITHUB_API_URL: string;
}

/** A failure to get a token, worded for the build log (never holds the key or a token). */
export class GitHubAppError extends Error {}

/** Tokens are renewed this long before GitHub's expiry, so a clone never starts with a dying one. */
const RENEW_BEFORE_MS = 5 * 60_000;

/**
 * The platform's GitHub App, as GitHub documents it: an RS256 JWT signed with the App's
 * private key (issued 60 s in the past for clock skew, valid 9 minutes) is exchanged at
 * `POST {GITHUB_API_URL}/app/installations/{id}/access_tokens` for an installation access
 * token, cached per installation until shortly before it expires.
 */
export class GitHubApp {
  private readonly cache = new Map<string, { token: string; expiresAt: number }>();
  private key: KeyObject | null = null;

  constructor(
    private readonly settings: GitHubAppSettings,
    private readonly now: () => number = Date.now,
  ) {}

  get configured(): boolean {
    return Boolean(this.settings.GITHUB_APP_ID && (this.settings.GITHUB_APP_PRIVATE_KEY || this.settings.GITHUB_APP_PRIVATE_KEY_FILE));
  }

  private privateKey(): KeyObject {
    if (!this.key) {
      const pem = this.settings.GITHUB_APP_PRIVATE_KEY ?? readFileSync(this.settings.GITHUB_APP_PRIVATE_KEY_FILE!, 'utf8');
      // Environment files often carry the PEM with literal "\n".
      this.key = createPrivateKey(pem.includes('\\n') ? pem.replace(/\\n/g, '\n') : pem);
    }
    return this.key;
  }

  /** The App's own JWT (for `/app/...` endpoints). */
  async appJwt(): Promise<string> {
    const nowSeconds = Math.floor(this.now() / 1000);
    // jose loads with the first call to GitHub, not with every control plane at rest.
    const { SignJWT } = await import('jose');
    return new SignJWT({})
      .setProtectedHeader({ alg: 'RS256' })
      .setIssuer(this.settings.GITHUB_APP_ID!)
      .setIssuedAt(nowSeconds - 60)
      .setExpirationTime(nowSeconds + 9 * 60)
      .sign(this.privateKey());
  }

  /** An installation access token (from the cache while it has more than 5 minutes left). */
  async installationToken(installationId: string | number): Promise<string> {
    if (!this.configured)
      throw new GitHubAppError(
        'the GitHub App is not configured on this server (GITHUB_APP_ID and GITHUB_APP_PRIVATE_KEY or GITHUB_APP_PRIVATE_KEY_FILE)',
      );
    const id = String(installationId);
    const cached = this.cache.get(id);
    if (cached && cached.expiresAt - RENEW_BEFORE_MS > this.now()) return cached.token;
    const url = `${this.settings.GITHUB_API_URL.replace(/\/+$/, '')}/app/installations/${encodeURIComponent(id)}/access_tokens`;
    let res: Response;
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${await this.appJwt()}`,
          accept: 'application/vnd.github+json',
          'x-github-api-version': '2022-11-28',
          'user-agent': 'slipway',
        },
      });
    } catch (err) {
      throw new GitHubAppError(`could not reach the GitHub API at ${this.settings.GITHUB_API_URL}: ${(err as Error).message}`);
    }
    if (!res.ok) {
      const body = (await res.json().catch(() => ({}))) as { message?: string };
      throw new GitHubAppError(
        `GitHub refused an installation token for installation ${id} (${res.status}${body.message ? `: ${body.message}` : ''})`,
      );
    }
    const { token, expires_at } = (await res.json()) as { token: string; expires_at: string };
    this.cache.set(id, { token, expiresAt: Date.parse(expires_at) });
    return token;
  }
}
