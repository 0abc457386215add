import type { SecretBox } from '../crypto/secret-box.js';
import { AppError, forbidden } from '../errors.js';

export interface GitHubSetupSettings {
  GITHUB_URL: string;
  GITHUB_API_URL: string;
  GITHUB_APP_SLUG?: string;
  GITHUB_APP_CLIENT_ID?: string;
  GITHUB_APP_CLIENT_SECRET?: string;
}

/** How long a started setup may take on GitHub's side. */
const STATE_TTL_MS = 60 * 60_000;
const PURPOSE = 'github-app-setup';
/** Pages of the user's installations read at most (100 each). */
const MAX_PAGES = 10;

const base = (url: string) => url.replace(/\/+$/, '');

/**
 * The GitHub App's setup flow, which links an installation to the organization whose admin
 * installed it. The install link carries a `state` sealed with the platform's key (naming the
 * organization, the user and an expiry), which GitHub hands back to the setup URL with the
 * `installation_id` and, with "Request user authorization (OAuth) during installation" on, a
 * `code`. The `installation_id` of that redirect can be typed by anyone (GitHub's docs say
 * so): it is believed only when the user access token the `code` yields lists it among the
 * installations that GitHub user can reach (`GET /user/installations`).
 */
export class GitHubSetupFlow {
  constructor(
    private readonly settings: GitHubSetupSettings,
    private readonly secrets: SecretBox,
    private readonly now: () => number = Date.now,
  ) {}

  get configured(): boolean {
    return Boolean(this.settings.GITHUB_APP_SLUG && this.settings.GITHUB_APP_CLIENT_ID && this.settings.GITHUB_APP_CLIENT_SECRET);
  }

  private requireConfigured() {
    if (!this.configured)
      throw new AppError(
        'UNAVAILABLE',
        'The GitHub App setup flow is not configured on this server (GITHUB_APP_SLUG, GITHUB_APP_CLIENT_ID, GITHUB_APP_CLIENT_SECRET); ' +
          'a site administrator can link an installation with PUT /github/installations/{installation_id}',
      );
  }

  /** The link that installs the App, and the state it carries. */
  start(organizationId: string, userId: string) {
    this.requireConfigured();
    const expires = this.now() + STATE_TTL_MS;
    const sealed = this.secrets.seal(JSON.stringify({ p: PURPOSE, o: organizationId, u: userId, e: expires }));
    const state = Buffer.from(sealed).toString('base64url');
    const installUrl = `${base(this.settings.GITHUB_URL)}/apps/${encodeURIComponent(this.settings.GITHUB_APP_SLUG!)}/installations/new?state=${state}`;
    return { install_url: installUrl, state, expires: new Date(expires).toISOString() };
  }

  /** The organization and user a state names; 403 when it was not sealed here, is for something else, or expired. */
  readState(state: string): { organizationId: string; userId: string } {
    const refused = forbidden(
      'The setup state is not valid or has expired: start again with POST /organizations/{org_slug}/github/installations/setup',
    );
    let claims: { p?: unknown; o?: unknown; u?: unknown; e?: unknown };
    try {
      claims = JSON.parse(this.secrets.open(Buffer.from(state, 'base64url').toString('utf8'))) as typeof claims;
    } catch {
      throw refused;
    }
    if (claims.p !== PURPOSE || typeof claims.o !== 'string' || typeof claims.u !== 'string' || typeof claims.e !== 'number') throw refused;
    if (claims.e < this.now()) throw refused;
    return { organizationId: claims.o, userId: claims.u };
  }

  /**
   * Whether the GitHub user who authorized `code` administers the installation (403 when GitHub
   * refuses the code). GitHub lists an installation to every user who can read one of its
   * repositories (`GET /user/installations`), which is no right to all of them: the user must
   * be an admin of the installation's GitHub organization, or be its user account.
   */
  async userReaches(code: string, installationId: number): Promise<boolean> {
    this.requireConfigured();
    const exchanged = await this.call<{ access_token?: string; error?: string; error_description?: string }>(
      `${base(this.settings.GITHUB_URL)}/login/oauth/access_token`,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          client_id: this.settings.GITHUB_APP_CLIENT_ID,
          client_secret: this.settings.GITHUB_APP_CLIENT_SECRET,
          code,
        }),
      },
    );
    if (!exchanged.access_token) {
      throw forbidden(
        `GitHub did not accept the authorization code (${exchanged.error ?? 'no token'}): install the App again from the setup link`,
      );
    }
    const auth = { headers: { authorization: `Bearer ${exchanged.access_token}` } };
    for (let page = 1; page <= MAX_PAGES; page++) {
      const listed = await this.call<{ installations?: Array<{ id?: number; account?: { login?: string; type?: string } }> }>(
        `${base(this.settings.GITHUB_API_URL)}/user/installations?per_page=100&page=${page}`,
        auth,
      );
      const installations = listed.installations ?? [];
      const found = installations.find((i) => i.id === installationId);
      if (found) return this.administers(found.account, auth);
      if (installations.length < 100) return false;
    }
    return false;
  }

  /** Whether the token's user is the installation's user account, or an active admin of its organization. */
  private async administers(account: { login?: string; type?: string } | undefined, auth: RequestInit): Promise<boolean> {
    const login = account?.login;
    if (!login) return false;
    const api = base(this.settings.GITHUB_API_URL);
    if (account.type === 'User') {
      const user = await this.call<{ login?: string }>(`${api}/user`, auth);
      return typeof user.login === 'string' && user.login.toLowerCase() === login.toLowerCase();
    }
    if (account.type !== 'Organization') return false;
    const membership = await this.call<{ state?: string; role?: string } | null>(
      `${api}/user/memberships/orgs/${encodeURIComponent(login)}`,
      auth,
      { notFound: null },
    );
    return membership?.state === 'active' && membership.role === 'admin';
  }

  private async call<T>(url: string, init: RequestInit, options: { notFound?: T } = {}): Promise<T> {
    let res: Response;
    try {
      res = await fetch(url, {
        ...init,
        headers: { accept: 'application/json', 'user-agent': 'slipway', 'x-github-api-version': '2022-11-28', ...init.headers },
        signal: AbortSignal.timeout(10_000),
      });
    } catch (err) {
      throw new AppError('UNAVAILABLE', `Could not reach GitHub (${(err as Error).message})`);
    }
    if (res.status === 404 && 'notFound' in options) return options.notFound as T;
    const body = (await res.json().catch(() => ({}))) as T & { message?: string };
    if (res.status === 401 || res.status === 403 || res.status === 404)
      throw forbidden(`GitHub refused the user authorization (${res.status}${body.message ? `: ${body.message}` : ''})`);
    if (!res.ok) throw new AppError('UNAVAILABLE', `GitHub answered ${res.status}`);
    return body;
  }
}
