/**
 * A real OpenID Connect provider (`oidc-provider`, its development login and consent pages) on
 * loopback, behind a small front server of this test that is the issuer's address. The front
 * forwards every request as it is, except that it can re-sign the ID token of the token
 * endpoint's answer for another audience, with the provider's own key: a token the issuer really
 * signed, meant for another client.
 */
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair, importJWK, SignJWT, type JWK } from 'jose';
import Provider from 'oidc-provider';

export interface TestAccount {
  email: string;
  email_verified?: boolean;
  groups?: string[];
}

export interface TestIssuer {
  /** The issuer's URL (the front server). */
  url: string;
  clientId: string;
  clientSecret: string;
  /** Re-sign the next token answers' ID tokens for this audience (null: forward untouched). */
  audienceOverride: string | null;
  close(): Promise<void>;
}

const listen = (server: Server) =>
  new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));

export async function startTestIssuer(options: { redirectUri: string; accounts: Record<string, TestAccount> }): Promise<TestIssuer> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), kid: 'test-key', alg: 'RS256', use: 'sig' } as JWK;
  const signingKey = await importJWK(jwk, 'RS256');

  const front = createServer();
  const frontPort = await listen(front);
  const url = `http://127.0.0.1:${frontPort}`;
  const issuer: TestIssuer = {
    url,
    clientId: 'slipway',
    clientSecret: 'test-client-secret-3f9a',
    audienceOverride: null,
    close: async () => {
      front.closeAllConnections();
      backend.closeAllConnections();
      await Promise.all([new Promise((r) => front.close(r)), new Promise((r) => backend.close(r))]);
    },
  };

  const provider = new Provider(url, {
    clients: [
      {
        client_id: issuer.clientId,
        client_secret: issuer.clientSecret,
        redirect_uris: [options.redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
    ],
    jwks: { keys: [jwk] },
    // The scopes' claims go into the ID token (Slipway reads only the ID token).
    conformIdTokenClaims: false,
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['preferred_username'], groups: ['groups'] },
    scopes: ['openid', 'email', 'profile', 'groups'],
    cookies: { keys: ['oidc-test-cookie-key'] },
    features: { devInteractions: { enabled: true } },
    findAccount: async (_ctx, id) => {
      const account = options.accounts[id];
      if (!account) return undefined;
      return {
        accountId: id,
        claims: async () => ({
          sub: id,
          email: account.email,
          email_verified: account.email_verified ?? true,
          preferred_username: id,
          groups: account.groups ?? [],
        }),
      };
    },
  });
  // The development pages warn on every start; the test knows.
  provider.on('server_error', (_ctx, err) => console.error('oidc-provider server_error', err));
  const backend = createServer(provider.callback());
  const backendPort = await listen(backend);

  front.on('request', (req, res) => {
    const tamper = issuer.audienceOverride !== null && req.method === 'POST' && req.url?.startsWith('/token');
    const forward = httpRequest(
      { host: '127.0.0.1', port: backendPort, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        if (!tamper) {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
          return;
        }
        const chunks: Buffer[] = [];
        answer.on('data', (c: Buffer) => chunks.push(c));
        answer.on('end', async () => {
          const body = JSON.parse(Buffer.concat(chunks).toString()) as { id_token?: string };
          if (body.id_token) {
            const header = decodeProtectedHeader(body.id_token);
            const claims = decodeJwt(body.id_token);
            body.id_token = await new SignJWT({ ...claims, aud: issuer.audienceOverride! })
              .setProtectedHeader({ alg: header.alg!, kid: header.kid })
              .sign(signingKey);
          }
          const text = JSON.stringify(body);
          const headers = { ...answer.headers, 'content-length': String(Buffer.byteLength(text)) };
          res.writeHead(answer.statusCode ?? 502, headers).end(text);
        });
      },
    );
    forward.on('error', () => res.writeHead(502).end());
    req.pipe(forward);
  });
  return issuer;
}
