import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Harness } from '../helpers/harness.js';

export const run = promisify(execFile);

/** The first missing system binary among `names`, for a skip message naming its package. */
export function missingBinary(binaries: Record<string, string>): string | null {
  const path = (process.env.PATH ?? '/usr/bin:/bin').split(':');
  for (const [binary, pkg] of Object.entries(binaries)) {
    if (!path.some((dir) => existsSync(join(dir, binary)))) return `${binary} is not installed (apt-get install ${pkg})`;
  }
  return null;
}

/** A free loopback port (the registry cannot report the port it bound to). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

export interface RegistryServer {
  /** `127.0.0.1:<port>`, the registry host for image references. */
  host: string;
  dir: string;
  stop(): Promise<void>;
}

/**
 * A real `distribution` registry (Debian's docker-registry) on loopback with filesystem
 * storage in a temp dir and token auth pointing at the platform.
 */
/**
 * A registry whose token service is the harness's platform: serves the harness's API on
 * loopback and trusts the platform's signing certificate.
 */
export async function startRegistryFor(h: Harness, opts: { service: string; port: number }): Promise<RegistryServer> {
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  const apiPort = (h.app.server.address() as { port: number }).port;
  const cert = (await h.app.inject({ method: 'GET', url: '/v1/integrations/signing-cert' })).json().certificate;
  return startRegistry({
    realm: `http://127.0.0.1:${apiPort}/v1/integrations/docker/auth`,
    service: opts.service,
    issuer: 'slipway',
    rootCertBundle: cert,
    port: opts.port,
  });
}

export async function startRegistry(opts: {
  realm: string;
  service: string;
  issuer: string;
  rootCertBundle: string;
  port?: number;
}): Promise<RegistryServer> {
  const dir = mkdtempSync(join(tmpdir(), 'slipway-registry-'));
  const port = opts.port ?? (await freePort());
  const bundle = join(dir, 'rootcerts.pem');
  writeFileSync(bundle, opts.rootCertBundle);
  mkdirSync(join(dir, 'storage'));
  const configPath = join(dir, 'config.yml');
  writeFileSync(
    configPath,
    [
      'version: 0.1',
      'log:',
      '  level: warn',
      '  accesslog:',
      '    disabled: true',
      'storage:',
      '  filesystem:',
      `    rootdirectory: ${join(dir, 'storage')}`,
      '  delete:',
      '    enabled: true',
      'http:',
      `  addr: 127.0.0.1:${port}`,
      'auth:',
      '  token:',
      `    realm: ${opts.realm}`,
      `    service: ${opts.service}`,
      `    issuer: ${opts.issuer}`,
      `    rootcertbundle: ${bundle}`,
      '',
    ].join('\n'),
  );
  let output = '';
  const child: ChildProcess = spawn('/usr/bin/docker-registry', ['serve', configPath], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.on('data', (d) => {
    output += d;
  });
  child.stderr!.on('data', (d) => {
    output += d;
  });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/v2/`);
      if (res.status === 401) break; // up, and asking for a token
      throw new Error(`unexpected status ${res.status}`);
    } catch (err) {
      if (child.exitCode !== null || Date.now() > deadline) {
        await stop();
        throw new Error(`docker-registry did not start: ${(err as Error).message}\n${output}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return { host: `127.0.0.1:${port}`, dir, stop };
}

/**
 * A one-layer OCI image layout (no base image, no network): `files` become the layer.
 * Returns the layout directory, usable as `oci:<dir>:<tag>`.
 */
export async function makeOciLayout(parent: string, tag: string, files: Record<string, string>): Promise<string> {
  const root = join(parent, 'rootfs');
  const layout = join(parent, 'layout');
  mkdirSync(root, { recursive: true });
  mkdirSync(join(layout, 'blobs', 'sha256'), { recursive: true });
  for (const [name, text] of Object.entries(files)) writeFileSync(join(root, name), text);
  const layerTar = join(parent, 'layer.tar');
  await run('tar', ['--sort=name', '--owner=0', '--group=0', '--mtime=@0', '-cf', layerTar, '-C', root, '.']);
  const blob = (data: Buffer) => {
    const digest = createHash('sha256').update(data).digest('hex');
    writeFileSync(join(layout, 'blobs', 'sha256', digest), data);
    return { digest: `sha256:${digest}`, size: data.length };
  };
  const layer = blob(readFileSync(layerTar));
  const config = blob(
    Buffer.from(
      JSON.stringify({
        architecture: 'amd64',
        os: 'linux',
        config: {},
        rootfs: { type: 'layers', diff_ids: [layer.digest] },
      }),
    ),
  );
  const manifest = blob(
    Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: 'application/vnd.oci.image.manifest.v1+json',
        config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...config },
        layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar', ...layer }],
      }),
    ),
  );
  writeFileSync(join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  writeFileSync(
    join(layout, 'index.json'),
    JSON.stringify({
      schemaVersion: 2,
      manifests: [
        { mediaType: 'application/vnd.oci.image.manifest.v1+json', ...manifest, annotations: { 'org.opencontainers.image.ref.name': tag } },
      ],
    }),
  );
  return layout;
}
