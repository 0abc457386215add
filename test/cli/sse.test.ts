/**
 * The CLI's event-stream reader on its own: a connection that drops mid-stream is resumed
 * with Last-Event-ID (each event seen once), heartbeats are ignored, the sequence ends at
 * `end`; a route the server does not have reads as "unavailable" (the caller then polls).
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serverEvents, StreamUnavailable } from '../../src/cli/sse.js';
import { ApiError } from '../../src/cli/errors.js';

const requests: IncomingHttpHeaders[] = [];
const server = createServer((req, res) => {
  requests.push(req.headers);
  if (req.url === '/v1/missing') {
    res
      .writeHead(404, { 'content-type': 'application/json' })
      .end(JSON.stringify({ status: 404, message: 'Route GET /v1/missing not found' }));
    return;
  }
  if (req.url === '/v1/gone') {
    res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 404, message: 'Deployment not found' }));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  if (req.headers['last-event-id'] === undefined) {
    // First connection: two lines, a heartbeat, then the connection drops.
    res.write(': ping\n\nid: 1\nevent: line\ndata: {"line":"one"}\n\nid: 2\nevent: line\ndata: {"line":"two"}\n\n');
    setTimeout(() => res.destroy(), 50);
  } else {
    res.end(`id: 3\nevent: line\ndata: {"line":"three"}\n\nid: 4\nevent: end\ndata: {"status":"complete","error_detail":null}\n\n`);
  }
});
let base: string;
beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('serverEvents', () => {
  it('resumes a dropped stream from the last event id and ends at `end`', async () => {
    const seen: string[] = [];
    for await (const e of serverEvents({ server: base, apiKey: 'k' }, '/v1/stream')) seen.push(`${e.id} ${e.event} ${e.data}`);
    expect(seen).toEqual([
      '1 line {"line":"one"}',
      '2 line {"line":"two"}',
      '3 line {"line":"three"}',
      '4 end {"status":"complete","error_detail":null}',
    ]);
    expect(requests.at(-1)).toMatchObject({ 'last-event-id': '2', 'x-api-key': 'k', accept: 'text/event-stream' });
  });

  it('an unknown route is StreamUnavailable; a missing record is the API error', async () => {
    await expect(serverEvents({ server: base }, '/v1/missing').next()).rejects.toBeInstanceOf(StreamUnavailable);
    const gone = await serverEvents({ server: base }, '/v1/gone')
      .next()
      .catch((e) => e);
    expect(gone).toBeInstanceOf(ApiError);
    expect(gone).toMatchObject({ status: 404, exitCode: 3, message: 'Deployment not found' });
  });
});
