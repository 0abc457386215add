import { Resolver } from 'node:dns/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UpstreamNameServer } from '../../src/platform/edge/upstream-name-server.js';

/** The DNS server Caddy reads each route's instances from, asked by an ordinary resolver. */
describe('UpstreamNameServer', () => {
  const server = new UpstreamNameServer();
  const resolver = new Resolver({ timeout: 2000, tries: 1 });
  const name = UpstreamNameServer.nameOf('shop.acme.example.localhost');

  beforeAll(async () => {
    await server.listen();
    resolver.setServers([`127.0.0.1:${server.port}`]);
  });
  afterAll(() => server.close());

  it("answers a route's instances as SRV records, and an answer change without touching anything else", async () => {
    expect(server.set(new Map([[name, [{ host: '127.0.0.1', port: 4001 }]]]))).toBe(true);
    expect(await resolver.resolveSrv(name)).toEqual([{ name: '127.0.0.1.addr.slipway.internal', port: 4001, priority: 10, weight: 10 }]);
    expect(server.set(new Map([[name, [{ host: '127.0.0.1', port: 4001 }]]]))).toBe(false);
    expect(
      server.set(
        new Map([
          [
            name,
            [
              { host: '127.0.0.1', port: 4002 },
              { host: '::1', port: 4003 },
            ],
          ],
        ]),
      ),
    ).toBe(true);
    const records = await resolver.resolveSrv(name);
    expect(records.map((r) => `${r.name}:${r.port}`).sort()).toEqual([
      '127.0.0.1.addr.slipway.internal:4002',
      'v6--1.addr.slipway.internal:4003',
    ]);
  });

  it('resolves SRV targets to the instance addresses; a route without ready instances has no record, an unknown name none at all', async () => {
    expect(await resolver.resolve4('127.0.0.1.addr.slipway.internal')).toEqual(['127.0.0.1']);
    expect(await resolver.resolve6('v6--1.addr.slipway.internal')).toEqual(['::1']);
    server.set(new Map([[name, []]]));
    await expect(resolver.resolveSrv(name)).rejects.toMatchObject({ code: 'ENODATA' });
    await expect(resolver.resolveSrv(UpstreamNameServer.nameOf('nobody.localhost'))).rejects.toMatchObject({ code: 'ENOTFOUND' });
    await expect(resolver.resolve4('example.com')).rejects.toMatchObject({ code: 'ENOTFOUND' });
  });

  it('gives every host name its own short, stable name', () => {
    const long = `${'a'.repeat(60)}.${'b'.repeat(60)}.${'c'.repeat(60)}.${'d'.repeat(60)}.localhost`;
    expect(UpstreamNameServer.nameOf(long)).toBe(UpstreamNameServer.nameOf(long));
    expect(UpstreamNameServer.nameOf(long).length).toBeLessThan(64);
    expect(UpstreamNameServer.nameOf('a.localhost')).not.toBe(UpstreamNameServer.nameOf('b.localhost'));
  });
});
