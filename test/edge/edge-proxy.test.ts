import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RouterServer } from '../../src/platform/edge/router-server.js';

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
