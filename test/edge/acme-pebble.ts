import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { get } from 'node:https';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { waitFor } from '../helpers/wait.js';

/** The first of the system packages these tests need that is missing, or null. */
export function missingPackage(names: string[]): string | null {
  for (const name of names) {
    const found = ['/usr/bin', '/usr/local/bin', '/usr/sbin'].some((d) => existsSync(join(d, name)));
    if (!found) return name;
  }
  return null;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

export function httpsGetText(url: string, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    get(url, { ca }, (res) => {
      let body = '';
      res.on('data', (c) => {
        body += c;
      });
      res.on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`${url}: ${res.statusCode}`))));
    }).on('error', reject);
  });
}

export interface Pebble {
  directoryUrl: string;
  /** CA of pebble's own HTTPS listener (ACME_CA_FILE). */
  listenerCaFile: string;
  /** The root that signs the certificates pebble issues (PEM). */
  issuingRoot(): Promise<string>;
  stop(): Promise<void>;
}

/**
 * A local ACME server: Debian's pebble, resolving every name to 127.0.0.1 through
 * pebble-challtestsrv's DNS, validating HTTP-01 on `httpPort` (the edge's HTTP port).
 */
export async function startPebble(dir: string, httpPort: number): Promise<Pebble> {
  const cert = join(dir, 'pebble-cert.pem');
  const key = join(dir, 'pebble-key.pem');
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
      '-days',
      '2',
      '-subj',
      '/CN=pebble test listener',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
      '-keyout',
      key,
      '-out',
      cert,
    ],
    { stdio: 'ignore' },
  );
  const [listen, management, dns, challengeManagement, tlsPort] = await Promise.all([
    freePort(),
    freePort(),
    freePort(),
    freePort(),
    freePort(),
  ]);
  const config = join(dir, 'pebble-config.json');
  writeFileSync(
    config,
    JSON.stringify({
      pebble: {
        listenAddress: `127.0.0.1:${listen}`,
        managementListenAddress: `127.0.0.1:${management}`,
        certificate: cert,
        privateKey: key,
        httpPort,
        tlsPort,
        ocspResponderURL: '',
        externalAccountBindingRequired: false,
      },
    }),
  );
  const children: ChildProcess[] = [];
  const dnsServer = spawn(
    'pebble-challtestsrv',
    [
      '-dns01',
      `127.0.0.1:${dns}`,
      '-http01',
      '',
      '-https01',
      '',
      '-tlsalpn01',
      '',
      '-management',
      `127.0.0.1:${challengeManagement}`,
      '-defaultIPv4',
      '127.0.0.1',
      '-defaultIPv6',
      '',
    ],
    { stdio: 'ignore' },
  );
  children.push(dnsServer);
  const pebble = spawn('pebble', ['-config', config, '-dnsserver', `127.0.0.1:${dns}`], {
    env: { ...process.env, PEBBLE_VA_NOSLEEP: '1', PEBBLE_WFE_NONCEREJECT: '0', PEBBLE_AUTHZREUSE: '0' },
    stdio: 'ignore',
  });
  children.push(pebble);
  const caPem = execFileSync('cat', [cert]).toString();
  const directoryUrl = `https://127.0.0.1:${listen}/dir`;
  await waitFor(
    'pebble to listen',
    () =>
      httpsGetText(directoryUrl, caPem).then(
        () => true,
        () => false,
      ),
    15_000,
    100,
  );
  return {
    directoryUrl,
    listenerCaFile: cert,
    issuingRoot: () => httpsGetText(`https://127.0.0.1:${management}/roots/0`, caPem),
    async stop() {
      await Promise.all(
        children.map(
          (c) =>
            new Promise<void>((resolve) => {
              if (c.exitCode !== null || c.signalCode !== null) return resolve();
              c.once('exit', () => resolve());
              c.kill('SIGTERM');
            }),
        ),
      );
    },
  };
}
