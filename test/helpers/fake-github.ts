import { spawn } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { jwtVerify } from 'jose';

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    req.on('data', (c) => (text += c));
    req.on('end', () => resolve(text));
    req.on('error', reject);
  });
}

/**
 * A stand-in for the GitHub API and git host: it checks the App's RS256 JWT with the App's
 * public key, issues installation tokens, and serves bare repositories under `/git/` over
 * git's smart HTTP (`git http-backend` as CGI) only to `x-access-token:<issued token>`, and
 * records the commit statuses, deployments and deployment statuses it receives.
 */
export class FakeGitHub {
  readonly appId = '123456';
  readonly privateKeyPem: string;
  private readonly publicKey;
  /** Installations that exist (others: 404). */
  readonly installations = new Set<string>();
  /** Tokens issued, in order, with the installation they belong to. */
  readonly issued: Array<{ installation: string; token: string }> = [];
  /** Delay before answering each git request. */
  gitDelayMs = 0;
  /** Personal tokens the API accepts (besides issued installation tokens). */
  readonly personalTokens = new Set<string>();
  /** Commit statuses received (`POST /repos/{owner}/{repo}/statuses/{sha}`), in order. */
  readonly statuses: Array<{ repository: string; sha: string; state: string; context: string; description: string; target_url?: string }> =
    [];
  /** Deployments created (`POST /repos/{owner}/{repo}/deployments`), in order. */
  readonly deployments: Array<{ id: number; repository: string; ref: string; environment: string }> = [];
  /** Deployment statuses received, in order. */
  readonly deploymentStatuses: Array<{ deployment: number; repository: string; state: string; environment_url?: string }> = [];
  /** The App's OAuth client (the setup flow exchanges a user's code with it). */
  readonly clientId = 'Iv1.fakeclient';
  readonly clientSecret = randomBytes(12).toString('hex');
  /**
   * Authorization codes GitHub would hand the setup URL: code → the installations that GitHub user
   * reaches as an admin of the installation's account (each installation's account is the GitHub
   * organization `acct-<id>`).
   */
  readonly userCodes = new Map<string, number[]>();
  /** Codes of users who reach installations only as plain members of their accounts (read access to a repository). */
  readonly readerCodes = new Map<string, number[]>();
  /** User access tokens issued for codes: token → installations administered and merely reached. */
  private readonly userTokens = new Map<string, { admin: number[]; reader: number[] }>();
  /** Requests refused, for assertions ("401 /git/..."). */
  readonly refused: string[] = [];
  private server!: Server;
  port = 0;

  constructor(private readonly projectRoot: string) {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    this.privateKeyPem = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
    this.publicKey = publicKey;
  }

  get apiUrl() {
    return `http://127.0.0.1:${this.port}`;
  }
  get gitUrl() {
    return `http://127.0.0.1:${this.port}/git`;
  }

  async start() {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((err) => {
        res.statusCode = 500;
        res.end(String(err));
      });
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  close() {
    return new Promise<void>((r) => this.server.close(() => r()));
  }

  private refuse(res: ServerResponse, status: number, what: string, message: string) {
    this.refused.push(`${status} ${what}`);
    res.writeHead(status, {
      'content-type': 'application/json',
      ...(status === 401 ? { 'www-authenticate': 'Basic realm="fake-github"' } : {}),
    });
    res.end(JSON.stringify({ message }));
  }

  private async handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url!, 'http://x');
    const tokenRoute = /^\/app\/installations\/([^/]+)\/access_tokens$/.exec(url.pathname);
    if (tokenRoute && req.method === 'POST') {
      const jwt = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      try {
        await jwtVerify(jwt ?? '', this.publicKey, { issuer: this.appId, algorithms: ['RS256'] });
      } catch (err) {
        return this.refuse(res, 401, url.pathname, `A JSON web token could not be decoded (${(err as Error).message})`);
      }
      const installation = decodeURIComponent(tokenRoute[1]!);
      if (!this.installations.has(installation)) return this.refuse(res, 404, url.pathname, 'Not Found');
      const token = `ghs_${randomBytes(18).toString('hex')}`;
      this.issued.push({ installation, token });
      res.writeHead(201, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ token, expires_at: new Date(Date.now() + 3600_000).toISOString() }));
    }
    // The OAuth code exchange lives on GitHub's web host (GITHUB_URL, here under /git).
    if (/^(\/git)?\/login\/oauth\/access_token$/.test(url.pathname) && req.method === 'POST') {
      const body = JSON.parse(await readBody(req)) as { client_id?: string; client_secret?: string; code?: string };
      const admin = body.code ? this.userCodes.get(body.code) : undefined;
      const reader = body.code ? this.readerCodes.get(body.code) : undefined;
      res.writeHead(200, { 'content-type': 'application/json' });
      if (body.client_id !== this.clientId || body.client_secret !== this.clientSecret)
        return res.end(JSON.stringify({ error: 'incorrect_client_credentials' }));
      if (!admin && !reader) return res.end(JSON.stringify({ error: 'bad_verification_code' }));
      this.userCodes.delete(body.code!);
      this.readerCodes.delete(body.code!);
      const token = `ghu_${randomBytes(18).toString('hex')}`;
      this.userTokens.set(token, { admin: admin ?? [], reader: reader ?? [] });
      return res.end(JSON.stringify({ access_token: token, token_type: 'bearer' }));
    }
    if (url.pathname === '/user/installations' && req.method === 'GET') {
      const user = this.userTokens.get(/^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '');
      if (!user) return this.refuse(res, 401, url.pathname, 'Bad credentials');
      // GitHub lists every installation the user can read a repository of, administered or not.
      const installations = [...user.admin, ...user.reader];
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(
        JSON.stringify({
          total_count: installations.length,
          installations: installations.map((id) => ({ id, account: { login: `acct-${id}`, type: 'Organization' } })),
        }),
      );
    }
    const membership = /^\/user\/memberships\/orgs\/acct-(\d+)$/.exec(url.pathname);
    if (membership && req.method === 'GET') {
      const user = this.userTokens.get(/^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '');
      if (!user) return this.refuse(res, 401, url.pathname, 'Bad credentials');
      const id = Number(membership[1]);
      const role = user.admin.includes(id) ? 'admin' : user.reader.includes(id) ? 'member' : null;
      if (!role) return this.refuse(res, 404, url.pathname, 'Not Found');
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ state: 'active', role, organization: { login: `acct-${id}` } }));
    }
    const repoRoute = /^\/repos\/([^/]+\/[^/]+)\/(statuses\/([^/]+)|deployments|deployments\/(\d+)\/statuses)$/.exec(url.pathname);
    if (repoRoute && req.method === 'POST') {
      const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
      if (!this.personalTokens.has(token) && !this.issued.some((t) => t.token === token))
        return this.refuse(res, 401, url.pathname, 'Bad credentials');
      const body = JSON.parse(await readBody(req)) as Record<string, string>;
      const repository = decodeURIComponent(repoRoute[1]!);
      let answer: unknown = {};
      if (repoRoute[3]) {
        this.statuses.push({
          repository,
          sha: repoRoute[3],
          state: body.state!,
          context: body.context!,
          description: body.description!,
          target_url: body.target_url,
        });
      } else if (repoRoute[4]) {
        this.deploymentStatuses.push({
          deployment: Number(repoRoute[4]),
          repository,
          state: body.state!,
          environment_url: body.environment_url,
        });
      } else {
        const id = this.deployments.length + 1000;
        this.deployments.push({ id, repository, ref: body.ref!, environment: body.environment! });
        answer = { id };
      }
      res.writeHead(201, { 'content-type': 'application/json' });
      return res.end(JSON.stringify(answer));
    }
    if (url.pathname.startsWith('/git/')) {
      // A slow git host keeps a clone running long enough to be watched (test/pipeline-build/github-reporting.test.ts).
      if (this.gitDelayMs) await new Promise((r) => setTimeout(r, this.gitDelayMs));
      const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      const [user, token] = basic ? Buffer.from(basic, 'base64').toString().split(':') : [];
      if (user !== 'x-access-token' || !this.issued.some((t) => t.token === token))
        return this.refuse(res, 401, url.pathname, 'Requires authentication');
      return this.gitBackend(req, res, url);
    }
    return this.refuse(res, 404, url.pathname, 'Not Found');
  }

  /** Runs `git http-backend` for one request (CGI: environment in, headers + body out). */
  private gitBackend(req: IncomingMessage, res: ServerResponse, url: URL) {
    const backend = join(execFileSync('git', ['--exec-path'], { encoding: 'utf8' }).trim(), 'git-http-backend');
    const child = spawn(backend, [], {
      env: {
        PATH: process.env.PATH,
        GIT_PROJECT_ROOT: this.projectRoot,
        GIT_HTTP_EXPORT_ALL: '1',
        PATH_INFO: url.pathname.slice('/git'.length),
        QUERY_STRING: url.search.slice(1),
        REQUEST_METHOD: req.method!,
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        REMOTE_USER: 'x-access-token',
        REMOTE_ADDR: '127.0.0.1',
        ...(req.headers['git-protocol'] ? { GIT_PROTOCOL: String(req.headers['git-protocol']) } : {}),
        ...(req.headers['content-encoding'] ? { HTTP_CONTENT_ENCODING: String(req.headers['content-encoding']) } : {}),
      },
    });
    req.pipe(child.stdin);
    let buffered = Buffer.alloc(0);
    let headersDone = false;
    child.stdout.on('data', (chunk: Buffer) => {
      if (headersDone) {
        res.write(chunk);
        return;
      }
      buffered = Buffer.concat([buffered, chunk]);
      const end = buffered.indexOf('\r\n\r\n');
      if (end < 0) return;
      headersDone = true;
      let status = 200;
      for (const line of buffered.subarray(0, end).toString().split('\r\n')) {
        const i = line.indexOf(':');
        const name = line.slice(0, i).trim();
        const value = line.slice(i + 1).trim();
        if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10);
        else res.setHeader(name, value);
      }
      res.statusCode = status;
      res.write(buffered.subarray(end + 4));
    });
    child.on('close', () => res.end());
  }
}
