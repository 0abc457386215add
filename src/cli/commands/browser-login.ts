import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { hostname } from 'node:os';
import type { AddressInfo } from 'node:net';
import open from 'open';
import { createApi, ok } from '../api.js';
import type { Context } from '../context.js';
import { ApiError, CliError, EXIT } from '../errors.js';
import { updateSettings } from '../settings.js';

/** How long the CLI waits for the browser (Ancla's CLI waits as long). */
const WAIT_MS = 5 * 60_000;

const PAGE = (title: string, text: string) =>
  `<!DOCTYPE html><html><head><meta charset="utf-8"><title>${title}</title></head>` +
  `<body style="font-family:system-ui;text-align:center;padding:4rem"><h2>${title}</h2><p>${text}</p></body></html>`;

interface Delivered {
  apiKey: string;
  keyId: string | null;
}

/**
 * Waits on 127.0.0.1 for the dashboard's `/cli-auth` page to send the browser back with a key:
 * only a callback carrying this login's code is taken (another page cannot hand the CLI a key
 * of its choosing), then the listener closes.
 */
function awaitCallback(code: string): Promise<{ port: number; delivered: Promise<Delivered>; close: () => void }> {
  return new Promise((ready, fail) => {
    let deliver!: (d: Delivered) => void;
    const delivered = new Promise<Delivered>((r) => (deliver = r));
    const server: Server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      const given = Buffer.from(url.searchParams.get('code') ?? '');
      const apiKey = url.searchParams.get('api_key');
      if (
        req.method !== 'GET' ||
        url.pathname !== '/callback' ||
        given.length !== code.length ||
        !timingSafeEqual(given, Buffer.from(code)) ||
        !apiKey
      ) {
        res
          .writeHead(400, { 'content-type': 'text/html; charset=utf-8' })
          .end(PAGE('Not this login', 'This callback does not carry the code your terminal shows.'));
        return;
      }
      res
        .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        .end(PAGE('CLI authorized', 'You can close this tab and return to your terminal.'));
      deliver({ apiKey, keyId: url.searchParams.get('key_id') });
    });
    server.on('error', fail);
    server.listen(0, '127.0.0.1', () =>
      ready({
        port: (server.address() as AddressInfo).port,
        delivered,
        close: () => {
          server.close();
          server.closeAllConnections();
        },
      }),
    );
  });
}

/** `slipway login --browser`: the same `/cli-auth` page and loopback callback Ancla's CLI uses. */
export async function browserLogin(ctx: Context, opts: { open: boolean }) {
  const { server } = ctx.settings;
  const raw = randomBytes(4).toString('hex').toUpperCase();
  const code = `${raw.slice(0, 4)}-${raw.slice(4)}`;
  const callback = await awaitCallback(code);
  try {
    const url = new URL('/cli-auth', server);
    url.search = new URLSearchParams({ code, port: String(callback.port), client: `slipway CLI on ${hostname()}` }).toString();
    process.stderr.write(`Confirmation code: ${code}\nApprove the login in your browser: ${url}\n`);
    if (opts.open) await open(url.toString()).catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_r, fail) => {
      timer = setTimeout(
        () => fail(new CliError('The browser login timed out after 5 minutes: run `slipway login --browser` again', EXIT.auth)),
        WAIT_MS,
      );
    });
    const { apiKey, keyId } = await Promise.race([callback.delivered, timeout]).finally(() => clearTimeout(timer));
    const session = await ok(createApi(server, apiKey).GET('/v1/auth/session'));
    if (!session.user) throw new ApiError(401, 'The key the browser handed over is not valid');
    updateSettings((s) => {
      s.server = server;
      s.api_key = apiKey;
      if (keyId) s.api_key_id = keyId;
      else delete s.api_key_id;
    }, ctx.settingsFile);
    ctx.out.result(
      { server, user: session.user, api_key: { id: keyId } },
      () => `Logged in to ${server} as ${session.user!.username} through the browser (API key stored in ${ctx.settingsFile})`,
    );
  } finally {
    callback.close();
  }
}
