import { appendFileSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MAX_NGINX_LINE_CHARS, NginxAccessLog, type NginxAccessEntry } from '../../src/platform/edge/nginx-access-log.js';
import { isSafeHostname, quoted, renderNginxConfig, upstreamAddress } from '../../src/platform/edge/nginx-config.js';
import { execFileSync } from 'node:child_process';
import { findNginx } from '../../src/config.js';
import { mkdirSync } from 'node:fs';

const dir = mkdtempSync(join(tmpdir(), 'slipway-nginx-log-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A line as nginx writes it with the platform's `slipway` log format (nginx-config.ts). */
const line = (route: string, status = 200) => `${route} ${status} 0.002\n`;

function reader(path: string) {
  const entries: NginxAccessEntry[] = [];
  const drops: string[] = [];
  const log = new NginxAccessLog({ path, onEntry: (e) => entries.push(e), onDrop: (r) => drops.push(r), readEveryMs: 60_000 });
  return { log, entries, drops };
}

describe("nginx's access log as the platform reads it", () => {
  it('reads lines written after it started, drops malformed and oversized ones (never holding them), keeps what follows', () => {
    const path = join(dir, 'access.log');
    writeFileSync(path, line('before.localhost'));
    const { log, entries, drops } = reader(path);
    log.start();
    appendFileSync(
      path,
      line('a.localhost') +
        'not a line\n' +
        `x.localhost 200 0.001 GET 127.0.0.1 /${'x'.repeat(MAX_NGINX_LINE_CHARS)}\n` +
        line('b.localhost', 503),
    );
    appendFileSync(path, 'c.localhost nope 1\nc.localhost 200 -1\nc.localhost 2000 0.1\nc.localhost 200 \n');
    // A line split across two writes is read whole.
    const half = line('d.localhost');
    appendFileSync(path, half.slice(0, 20));
    log.read();
    appendFileSync(path, half.slice(20));
    log.read();
    expect(entries.map((e) => [e.route, e.status])).toEqual([
      ['a.localhost', 200],
      ['b.localhost', 503],
      ['d.localhost', 200],
    ]);
    expect(drops).toEqual(['malformed', 'oversized', 'malformed', 'malformed', 'malformed', 'malformed']);
    log.close();
  });

  it("reads the request's method, client and URI when logged, no route as empty, and the JSON lines of earlier versions", () => {
    const path = join(dir, 'fields.log');
    writeFileSync(path, '');
    const { log, entries, drops } = reader(path);
    log.start();
    appendFileSync(
      path,
      [
        'a.localhost 404 0.013 POST 10.0.0.7 /search?q=a\\x22b c',
        '- 400 0.000',
        ' 404 0.001',
        JSON.stringify({ route: 'old.localhost', status: 201, duration: 0.5, method: 'PUT', uri: '/x', remote_ip: '::1' }),
        'b.localhost 200 0.001 GET',
      ].join('\n') + '\n',
    );
    log.read();
    expect(entries).toEqual([
      { route: 'a.localhost', status: 404, duration: 0.013, method: 'POST', remoteIp: '10.0.0.7', uri: '/search?q=a\\x22b c' },
      { route: '', status: 400, duration: 0, method: '', remoteIp: '', uri: '' },
      { route: '', status: 404, duration: 0.001, method: '', remoteIp: '', uri: '' },
      { route: 'old.localhost', status: 201, duration: 0.5, method: 'PUT', remoteIp: '::1', uri: '/x' },
    ]);
    expect(drops).toEqual(['malformed']);
    log.close();
  });

  it('empties the file once read past 4 MiB, and reads on from its start', () => {
    const path = join(dir, 'big.log');
    writeFileSync(path, '');
    const { log, entries } = reader(path);
    log.start();
    const chunk = line('big.localhost').repeat(1000);
    const lines = Math.ceil((4 * 1024 * 1024) / chunk.length) * 1000;
    for (let i = 0; i < lines / 1000; i++) appendFileSync(path, chunk);
    for (let i = 0; i < 5; i++) log.read(); // 1 MiB per read
    expect(entries.length).toBe(lines);
    expect(statSync(path).size).toBe(0);
    appendFileSync(path, line('after.localhost'));
    log.read();
    expect(entries.at(-1)!.route).toBe('after.localhost');
    log.close();
  });

  it('never opens the log through a symlink', () => {
    const target = join(dir, 'target.log');
    writeFileSync(target, '');
    const path = join(dir, 'link.log');
    symlinkSync(target, path);
    const { log, entries } = reader(path);
    log.start();
    appendFileSync(target, line('a.localhost'));
    log.read();
    expect(entries).toEqual([]);
    log.close();
  });
});

describe('what may enter nginx.conf', () => {
  it('takes plain DNS names and addresses only, and quotes strings without a $', () => {
    for (const ok of ['app.shop.org.localhost', 'a-b.example.com', 'x1.io']) expect(isSafeHostname(ok)).toBe(true);
    for (const bad of ['a;b.com', 'a b', '"x"', '$host', 'a.com;}', 'A.com', '-a.com', '', 'a..b', `${'a'.repeat(64)}.com`])
      expect(isSafeHostname(bad)).toBe(false);
    expect(upstreamAddress('127.0.0.1', 8080)).toBe('127.0.0.1:8080');
    expect(upstreamAddress('fd00::1', 80)).toBe('[fd00::1]:80');
    expect(upstreamAddress('127.0.0.1;', 80)).toBeNull();
    expect(upstreamAddress('127.0.0.1', 0)).toBeNull();
    expect(quoted('a "b" \\ c')).toBe('"a \\"b\\" \\\\ c"');
    expect(() => quoted('$host')).toThrow();
  });

  it('listens on an IPv6 ROUTER_HOST in brackets', () => {
    const base = { dir: '/tmp/x', workerUser: null, port: 8081, httpsPort: null, responderPort: 2, routes: [], redirects: [], tls: [] };
    expect(renderNginxConfig({ ...base, listenHost: '::1' })).toContain('listen [::1]:8081 default_server;');
    expect(renderNginxConfig({ ...base, listenHost: '127.0.0.1' })).toContain('listen 127.0.0.1:8081 default_server;');
    expect(renderNginxConfig({ ...base, listenHost: '0.0.0.0' })).toContain('listen 8081 default_server;');
  });
});

describe("one tenant's data never makes nginx refuse every route", () => {
  it.skipIf(!findNginx())('accepts a 249-character route name and maintenance messages that escape past nginx’s 4 KiB value', () => {
    const dir = mkdtempSync(join(tmpdir(), 'slipway-nginx-conf-'));
    try {
      mkdirSync(join(dir, 'tmp'));
      const long = ['a'.repeat(63), 'b'.repeat(63), 'c'.repeat(63), 'd'.repeat(57)].join('.');
      const down = (host: string, message: string) => ({
        host,
        names: [host],
        upstreams: [],
        maintenance: { window: { environmentId: 'e', message, retryAfter: 60, applications: {} }, applicationId: undefined },
      });
      const conf = renderNginxConfig({
        dir,
        workerUser: null,
        listenHost: '127.0.0.1',
        port: 1,
        httpsPort: null,
        responderPort: 2,
        routes: [
          { host: long, names: [long], upstreams: [{ host: '127.0.0.1', port: 3 }] },
          down('quotes.example.com', '"'.repeat(2000)),
          down('wide.example.com', '維'.repeat(1400)),
          down('short.example.com', 'Back at 5 $HOME'),
        ],
        redirects: [],
        tls: [],
        logRequests: true, // the longer log format (LOG_LEVEL debug) is checked by nginx too
      });
      writeFileSync(join(dir, 'nginx.conf'), conf);
      execFileSync(findNginx()!, ['-t', '-q', '-c', join(dir, 'nginx.conf')], { stdio: 'pipe' });
      expect(conf).toContain('Back at 5 &#36;HOME'); // a short message is kept, its `$` harmless
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
