/**
 * Log drains over HTTP against real PostgreSQL and a real deployment: loopback receivers started
 * here (allowed by WEBHOOK_ALLOW_PRIVATE) get the application's output and its deploy log as
 * RFC 5424 syslog over TCP and over TLS (octet-counting frames, checked field by field), JSON
 * lines with the shared-secret header, and an OTLP/HTTP JSON logs request; a drain nobody listens
 * on counts its failed sends and dropped lines while the others and the app go on.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Server as TcpServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer as createTlsServer } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';
import { call, expectError } from '../control-plane/fixtures.js';
import { slipway } from '../cli/slipway.js';
import { deployableApp, settled } from '../pipeline-deploy/fixtures.js';

const SECRET = 'tok-very-secret-123';
/** Waits on a machine shared with other work (seconds on an idle one). */
const LOADED = { timeout: 90_000, every: 200 };

/** A syslog receiver: splits RFC 6587 octet-counted frames, failing on anything else. */
class SyslogReceiver {
  readonly frames: string[] = [];
  framingErrors = 0;
  private server!: TcpServer;
  private readonly sockets = new Set<Socket>();
  constructor(private readonly tls?: { key: string; cert: string }) {}
  async start() {
    const onSocket = (socket: Socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      let buffer = Buffer.alloc(0);
      socket.on('data', (chunk: Buffer) => {
        buffer = Buffer.concat([buffer, chunk]);
        for (;;) {
          const space = buffer.indexOf(0x20);
          if (space < 0) break;
          const lengthText = buffer.subarray(0, space).toString();
          if (!/^[1-9]\d*$/.test(lengthText)) {
            this.framingErrors++;
            socket.destroy();
            return;
          }
          const length = Number(lengthText);
          if (buffer.length < space + 1 + length) break;
          this.frames.push(buffer.subarray(space + 1, space + 1 + length).toString('utf8'));
          buffer = buffer.subarray(space + 1 + length);
        }
      });
    };
    this.server = this.tls ? createTlsServer(this.tls, onSocket) : createTcpServer(onSocket);
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    return this;
  }
  get port() {
    return (this.server.address() as AddressInfo).port;
  }
  close() {
    for (const s of this.sockets) s.destroy();
    return new Promise<void>((r) => this.server.close(() => r()));
  }
}

/** Records every POST: path, headers and body text. */
class HttpReceiver {
  readonly requests: Array<{ path: string; headers: IncomingHttpHeaders; body: string }> = [];
  private server!: Server;
  async start() {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        this.requests.push({ path: req.url ?? '', headers: req.headers, body });
        res.end('{}');
      });
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    return this;
  }
  get url() {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
  close() {
    this.server.closeAllConnections();
    return new Promise<void>((r) => this.server.close(() => r()));
  }
}

/** A self-signed certificate for 127.0.0.1. */
function certificate() {
  const dir = mkdtempSync(join(tmpdir(), 'slipway-drain-tls-'));
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      join(dir, 'key.pem'),
      '-out',
      join(dir, 'cert.pem'),
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  return { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'cert.pem'), 'utf8') };
}

const tlsIdentity = certificate();
const syslogTcp = new SyslogReceiver();
const syslogTls = new SyslogReceiver(tlsIdentity);
const http = new HttpReceiver();
let h: Harness;
let alice: TestUser;
/** A port nothing listens on. */
let deadPort: number;

beforeAll(async () => {
  await Promise.all([syslogTcp.start(), syslogTls.start(), http.start()]);
  const probe = createTcpServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  deadPort = (probe.address() as AddressInfo).port;
  await new Promise<void>((r) => probe.close(() => r()));
  h = await createHarness(
    { ROUTER_HOST: '127.0.0.1', ROUTER_PORT: 0, RUNTIME_STOP_GRACE_MS: 2000, WEBHOOK_ALLOW_PRIVATE: true, LOG_DRAIN_BUFFER_LINES: 1000 },
    { jobs: true, runtime: true },
  );
  alice = await h.user();
  await h.app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await h?.close();
  await Promise.all([syslogTcp.close(), syslogTls.close(), http.close()]);
});

/**
 * Boots, says its secret (scrubbed by the platform), then 1500 lines, 100 every 50 ms: more than a
 * dead drain's buffer (1000) holds, never more than a live drain has time to send.
 */
const CHATTY_APP = `
const http = require('http');
console.log('boot v1 secret=' + process.env.API_TOKEN);
console.error('a warning "quoted" ]');
let i = 0;
const timer = setInterval(() => {
  for (let k = 0; k < 100; k++) console.log('line ' + i++);
  if (i >= 1500) clearInterval(timer);
}, 50);
http.createServer((req, res) => res.end('ok')).listen(Number(process.env.PORT), '127.0.0.1');
`;

describe('log drains', () => {
  it('ships runtime and deploy logs as syslog (TCP and TLS), JSON lines and OTLP; a dead drain drops and counts', async () => {
    const app = await deployableApp(h, alice);
    const { org, project, app: appSlug } = app.slugs;
    const base = `/v1/organizations/${org}/log-drains`;

    // Refused: a wrong scheme for the kind, a path in a syslog address, a certificate on plain TCP, another organization's app.
    expectError(await call(h, 'POST', base, alice, { kind: 'syslog', url: `${http.url}/x` }), 422);
    expectError(await call(h, 'POST', base, alice, { kind: 'syslog', url: `syslog+tcp://127.0.0.1:${syslogTcp.port}/path` }), 422);
    expectError(
      await call(h, 'POST', base, alice, { kind: 'syslog', url: `syslog+tcp://127.0.0.1:${syslogTcp.port}`, ca: tlsIdentity.cert }),
      422,
    );
    expectError(await call(h, 'POST', base, alice, { kind: 'https', url: `${http.url}/x`, application: 'elsewhere/app' }), 422);
    const bob = await h.user();
    expectError(await call(h, 'GET', base, bob), 403);

    const tcp = await call(h, 'POST', base, alice, { kind: 'syslog', url: `syslog+tcp://127.0.0.1:${syslogTcp.port}` });
    expect(tcp.status, tcp.raw).toBe(201);
    expect(tcp.body).toMatchObject({ kind: 'syslog', application: null, sources: ['runtime', 'build', 'deploy'], secret: null });
    const tls = await call(h, 'POST', base, alice, {
      kind: 'syslog',
      url: `syslog+tls://127.0.0.1:${syslogTls.port}`,
      ca: tlsIdentity.cert,
      application: `${project}/${appSlug}`,
      sources: ['runtime'],
    });
    expect(tls.status, tls.raw).toBe(201);
    expect(tls.body.application).toBe(`${project}/${appSlug}`);
    const json = await call(h, 'POST', base, alice, { kind: 'https', url: `${http.url}/ingest?token=urlTOKEN` });
    expect(json.status, json.raw).toBe(201);
    expect(json.body.secret).toMatch(/^drain_/);
    expect(json.body.url).not.toContain('urlTOKEN');
    const otlp = await call(h, 'POST', base, alice, { kind: 'otlp', url: `${http.url}/v1/logs`, token: 'otlp-token' });
    expect(otlp.status, otlp.raw).toBe(201);
    const dead = await call(h, 'POST', base, alice, { kind: 'syslog', name: 'down', url: `syslog+tcp://127.0.0.1:${deadPort}` });
    expect(dead.status, dead.raw).toBe(201);

    const release = await app.release({ 'app.js': CHATTY_APP }, 'web: node app.js\n');
    const deployed = await call(h, 'POST', `/v1/releases/${release}/deploy`, alice);
    expect((await settled(h, alice, deployed.body.deployment_id)).status).toBe('complete');

    // Syslog over TCP: every line, runtime and deploy, each an RFC 5424 message with Slipway's structured data.
    const last = await waitFor('the last runtime line over TCP', () => syslogTcp.frames.find((f) => f.endsWith(' line 1499')), LOADED);
    expect(syslogTcp.framingErrors).toBe(0);
    const sd = (instance: string, source: string, stream: string) =>
      `[slipway@32473 organization="${org}" project="${project}" app="${appSlug}" environment="production" release="1" ` +
      `instance="${instance}" source="${source}" stream="${stream}"]`;
    expect(last).toMatch(new RegExp(`^<14>1 \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z ${org}\\.${project} ${appSlug} web\\.1 runtime `));
    expect(last).toContain(`${sd('web.1', 'runtime', 'stdout')} line 1499`);
    const warning = syslogTcp.frames.find((f) => f.includes('a warning'));
    expect(warning).toMatch(/^<11>1 /);
    expect(warning).toContain(`${sd('web.1', 'runtime', 'stderr')} a warning "quoted" ]`);
    const deployLine = await waitFor('a deploy log line over TCP', () => syslogTcp.frames.find((f) => / deploy deploy \[/.test(f)), LOADED);
    expect(deployLine).toContain(sd('deploy', 'deploy', 'log'));
    expect(syslogTcp.frames.some((f) => f.includes('boot v1 secret='))).toBe(true);
    expect(syslogTcp.frames.join('\n')).not.toContain(SECRET);

    // Over TLS (the drain trusts the given certificate): the app's runtime lines only.
    await waitFor('the last runtime line over TLS', () => syslogTls.frames.find((f) => f.endsWith(' line 1499')), LOADED);
    expect(syslogTls.framingErrors).toBe(0);
    expect(syslogTls.frames.every((f) => f.includes('source="runtime"'))).toBe(true);

    // JSON lines with the shared secret.
    const ingest = await waitFor(
      'JSON lines at the HTTPS drain',
      async () => {
        const lines = http.requests
          .filter((r) => r.path.startsWith('/ingest'))
          .flatMap((r) =>
            r.body
              .trim()
              .split('\n')
              .map((l) => JSON.parse(l)),
          );
        return lines.some((l) => l.message === 'line 1499') && lines.some((l) => l.source === 'deploy') ? lines : null;
      },
      LOADED,
    );
    const posts = http.requests.filter((r) => r.path.startsWith('/ingest'));
    expect(posts.every((r) => r.headers['x-slipway-drain-secret'] === json.body.secret)).toBe(true);
    expect(posts[0]!.headers['content-type']).toBe('application/x-ndjson');
    expect(posts.length).toBeLessThan(ingest.length); // batched
    expect(ingest.find((l) => l.message === 'line 1499')).toEqual({
      timestamp: expect.stringMatching(/Z$/),
      message: 'line 1499',
      source: 'runtime',
      stream: 'stdout',
      organization: org,
      project,
      app: appSlug,
      environment: 'production',
      release: 1,
      instance: 'web.1',
    });

    // OTLP/HTTP logs, JSON encoding: resources by app environment and release, records with severity and attributes.
    const exported = await waitFor(
      'OTLP records',
      () => {
        const records = http.requests
          .filter((r) => r.path === '/v1/logs')
          .flatMap((r) => JSON.parse(r.body).resourceLogs as any[])
          .flatMap((rl) => rl.scopeLogs.flatMap((s: any) => s.logRecords.map((lr: any) => ({ resource: rl.resource, ...lr }))));
        return records.some((r) => r.body.stringValue === 'line 1499') ? records : null;
      },
      LOADED,
    );
    expect(http.requests.filter((r) => r.path === '/v1/logs').every((r) => r.headers.authorization === 'Bearer otlp-token')).toBe(true);
    const record = exported.find((r) => r.body.stringValue === 'a warning "quoted" ]');
    expect(record.severityNumber).toBe(17);
    expect(record.severityText).toBe('ERROR');
    expect(record.timeUnixNano).toMatch(/^\d{19}$/);
    expect(record.attributes).toEqual(
      expect.arrayContaining([
        { key: 'slipway.instance', value: { stringValue: 'web.1' } },
        { key: 'log.iostream', value: { stringValue: 'stderr' } },
      ]),
    );
    expect(record.resource.attributes).toEqual(
      expect.arrayContaining([
        { key: 'service.name', value: { stringValue: appSlug } },
        { key: 'deployment.environment', value: { stringValue: 'production' } },
        { key: 'service.version', value: { stringValue: 'v1' } },
      ]),
    );

    // The dead drain: its sends fail (retried with backoff), its buffer of 1000 lines overflows; the counts show in the API.
    const down = await waitFor(
      'the dead drain to count drops and failures',
      async () => {
        const r = await call(h, 'GET', `${base}/${dead.body.id}`, alice);
        return r.body.lines_dropped > 0 && r.body.failed_sends > 0 ? r.body : null;
      },
      LOADED,
    );
    expect(down).toMatchObject({ lines_sent: 0, last_error: 'connection failed (ECONNREFUSED)', last_sent_at: null });
    const healthy = await waitFor(
      'the TCP drain to count its lines',
      async () => {
        const r = await call(h, 'GET', `${base}/${tcp.body.id}`, alice);
        return r.body.lines_sent >= 1502 ? r.body : null;
      },
      LOADED,
    );
    expect(healthy).toMatchObject({ lines_dropped: 0, failed_sends: 0, last_error: null });
    expect((await call(h, 'GET', base, alice)).raw).not.toContain(json.body.secret);

    // The CLI lists and removes drains.
    const home = mkdtempSync(join(tmpdir(), 'slipway-drains-home-'));
    const { port } = h.app.server.address() as AddressInfo;
    const env = {
      HOME: home,
      XDG_CONFIG_HOME: join(home, '.config'),
      SLIPWAY_SERVER: `http://127.0.0.1:${port}`,
      SLIPWAY_API_KEY: alice.apiKey,
    };
    const listed = await slipway(['drains', 'list', '--org', org], env);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain(dead.body.id);
    expect(listed.stdout).toContain('ECONNREFUSED');
    const added = await slipway(
      ['drains', 'add', 'https', `${http.url}/cli`, '--application', `${project}/${appSlug}`, '--org', org, '--json'],
      env,
    );
    expect(added.code, added.stderr).toBe(0);
    expect(JSON.parse(added.stdout)).toMatchObject({
      kind: 'https',
      application: `${project}/${appSlug}`,
      secret: expect.stringMatching(/^drain_/),
    });
    expect((await slipway(['drains', 'remove', dead.body.id, '--org', org], env)).code).toBe(0);
    expectError(await call(h, 'GET', `${base}/${dead.body.id}`, alice), 404);
  }, 300_000);
});
