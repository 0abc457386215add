import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer as createNetServer } from 'node:net';
import { RouterServer } from '../../src/platform/edge/router-server.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The built-in edge as a proxy, against a plain upstream: streaming both ways (server-sent
 * events arrive while the upstream still writes; a request body reaches the upstream while
 * the client still sends) and the forwarding headers.
 */
let upstream: Server;
let edge: RouterServer;
let releaseEvents: () => void = () => {};
let bodyChunkSeen: () => void = () => {};

beforeAll(async () => {
  upstream = createServer((req: IncomingMessage, res) => {
    if (req.url === '/events') {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.write('data: first\n\n');
      releaseEvents = () => res.end('data: last\n\n');
      return;
    }
    if (req.url === '/upload') {
      let received = '';
      req.on('data', (c) => {
        received += c;
        bodyChunkSeen();
      });
      req.on('end', () => res.end(`got ${received}`));
      return;
    }
    res.end(
      JSON.stringify({
        for: req.headers['x-forwarded-for'],
        proto: req.headers['x-forwarded-proto'],
        host: req.headers['x-forwarded-host'],
      }),
    );
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
  edge = new RouterServer({ host: '127.0.0.1', port: 0 });
  edge.table.set('app.test.localhost', [{ instanceId: 'u1', host: '127.0.0.1', port: (upstream.address() as { port: number }).port }]);
  await edge.listen();
});

afterAll(async () => {
  await edge?.close();
  await new Promise((r) => upstream?.close(r));
});

describe('the built-in edge as a proxy', () => {
  it('sets X-Forwarded-For (appended), -Proto and -Host', async () => {
    const body = await new Promise<string>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port: edge.port, path: '/', headers: { host: 'app.test.localhost', 'x-forwarded-for': '203.0.113.9' } },
        (res) => {
          let text = '';
          res.on('data', (c) => {
            text += c;
          });
          res.on('end', () => resolve(text));
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(JSON.parse(body)).toEqual({ for: '203.0.113.9, 127.0.0.1', proto: 'http', host: 'app.test.localhost' });
  });

  it('passes server-sent events through as they are written', async () => {
    const events: string[] = [];
    const done = new Promise<void>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: edge.port, path: '/events', headers: { host: 'app.test.localhost' } }, (res) => {
        expect(res.headers['content-type']).toBe('text/event-stream');
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          events.push(chunk);
          // The upstream ends only once the first event went through the edge.
          if (events.length === 1) releaseEvents();
        });
        res.on('end', () => resolve());
      });
      req.on('error', reject);
      req.end();
    });
    await done;
    expect(events.join('')).toBe('data: first\n\ndata: last\n\n');
    expect(events[0]).toBe('data: first\n\n');
  });

  it('streams a request body to the upstream before the client finished sending it', async () => {
    const answer = await new Promise<string>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: edge.port,
          method: 'POST',
          path: '/upload',
          headers: { host: 'app.test.localhost', 'transfer-encoding': 'chunked' },
        },
        (res) => {
          let text = '';
          res.on('data', (c) => {
            text += c;
          });
          res.on('end', () => resolve(text));
        },
      );
      req.on('error', reject);
      // The second chunk is sent only after the upstream received the first one.
      bodyChunkSeen = () => {
        bodyChunkSeen = () => {};
        req.end('part2');
      };
      req.write('part1-');
    });
    expect(answer).toBe('got part1-part2');
  });
});

/** A GET through `router` for `host`: status, the Retry-After header and the body. */
function getThrough(router: RouterServer, host: string): Promise<{ status: number; retryAfter: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: router.port, path: '/', headers: { host } }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, retryAfter: res.headers['retry-after'] as string | undefined, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** A port nothing listens on (bound, then closed): connections to it are refused. */
async function refusingPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const { port } = s.address() as { port: number };
  await new Promise((r) => s.close(r));
  return port;
}

describe('the built-in edge while instances are replaced', () => {
  it('answers 503 with Retry-After for an application with no healthy instance, 404 only for an unknown name', async () => {
    const router = new RouterServer({ host: '127.0.0.1', port: 0 });
    router.table.set('down.test.localhost', [{ instanceId: 'd1', host: '127.0.0.1', port: await refusingPort() }]);
    router.table.setReady('d1', false);
    await router.listen();
    try {
      const down = await getThrough(router, 'down.test.localhost');
      expect(down.status).toBe(503);
      expect(down.retryAfter).toBe('1');
      expect((await getThrough(router, 'nobody.test.localhost')).status).toBe(404);
    } finally {
      await router.close();
    }
  });

  it('holds a request whose instances all refuse connections until the route names one that answers', async () => {
    const router = new RouterServer({ host: '127.0.0.1', port: 0, retryWindowMs: 30_000 });
    const upstreamPort = (upstream.address() as { port: number }).port;
    // An instance going away: it drops every connection it gets (and counts them).
    let dropped = 0;
    const dying = createNetServer((socket) => {
      dropped++;
      socket.destroy();
    });
    await new Promise<void>((r) => dying.listen(0, '127.0.0.1', () => r()));
    router.table.set('moving.test.localhost', [{ instanceId: 'old', host: '127.0.0.1', port: (dying.address() as { port: number }).port }]);
    await router.listen();
    try {
      const held = getThrough(router, 'moving.test.localhost');
      // The request reached the instance and was dropped, more than once: it is held, not failed.
      await waitFor('the request to be tried on the dying instance twice', () => dropped >= 2);
      router.table.set('moving.test.localhost', [{ instanceId: 'new', host: '127.0.0.1', port: upstreamPort }]);
      const answer = await held;
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.body)).toMatchObject({ host: 'moving.test.localhost' });
    } finally {
      await router.close();
      await new Promise((r) => dying.close(r));
    }
  });

  it('answers 502 once the hold window has passed with no instance answering', async () => {
    const router = new RouterServer({ host: '127.0.0.1', port: 0, retryWindowMs: 600 });
    router.table.set('gone.test.localhost', [{ instanceId: 'g1', host: '127.0.0.1', port: await refusingPort() }]);
    await router.listen();
    try {
      expect((await getThrough(router, 'gone.test.localhost')).status).toBe(502);
    } finally {
      await router.close();
    }
  });
});
