import { join } from 'node:path';
import { run } from './registry-server.js';

export const BASE_IMAGE = 'localhost/busybox-base:latest';
const APPLETS = [
  'sh',
  'ls',
  'cat',
  'echo',
  'mkdir',
  'test',
  '[',
  'env',
  'sleep',
  'httpd',
  'wc',
  'id',
  'pwd',
  'head',
  'grep',
  'tr',
  'mknod',
];

/**
 * A base image without network: busybox-static copied into an empty image (`buildah from
 * scratch`), committed into the same storage root the builder uses.
 */
export async function buildBusyboxBase(storageRoot: string): Promise<void> {
  const buildah = (...args: string[]) =>
    run('buildah', ['--root', join(storageRoot, 'storage'), '--runroot', join(storageRoot, 'run'), '--storage-driver', 'vfs', ...args]);
  const container = (await buildah('from', 'scratch')).stdout.trim();
  try {
    const mount = (await buildah('mount', container)).stdout.trim();
    await run('mkdir', ['-p', join(mount, 'bin'), join(mount, 'tmp'), join(mount, 'run')]);
    await run('cp', ['/bin/busybox', join(mount, 'bin', 'busybox')]);
    for (const applet of APPLETS) await run('ln', ['-s', 'busybox', join(mount, 'bin', applet)]);
    await buildah('config', '--env', 'PATH=/bin', container);
    await buildah('commit', '-q', container, BASE_IMAGE);
  } finally {
    await buildah('rm', container).catch(() => {});
  }
}

/**
 * An image made here with buildah (no network: busybox copied into an empty image): it
 * listens on its EXPOSE port (8080, not $PORT), runs as USER 1000 and declares a worker
 * process in a label; saved as an OCI layout for `skopeo copy`.
 */
export async function makeImageLayout(dir: string): Promise<string> {
  const storage = join(dir, 'storage');
  await buildBusyboxBase(storage);
  const buildah = (...args: string[]) =>
    run('buildah', ['--root', join(storage, 'storage'), '--runroot', join(storage, 'run'), '--storage-driver', 'vfs', ...args]);
  const container = (await buildah('from', '--pull=false', BASE_IMAGE)).stdout.trim();
  const mount = (await buildah('mount', container)).stdout.trim();
  await run('sh', [
    '-c',
    `mkdir -p ${mount}/www && echo "hello from a pushed image" > ${mount}/www/index.html && chmod -R a+rX ${mount}/www`,
  ]);
  await buildah(
    'config',
    '--port',
    '8080',
    '--user',
    '1000:1000',
    '--workingdir',
    '/www',
    '--label',
    'slipway.process.worker=sleep 3600',
    '--label',
    'org.opencontainers.image.title=pushed',
    '--cmd',
    'httpd -f -p 8080 -h /www',
    container,
  );
  await buildah('commit', '-q', container, 'localhost/pushed:v1');
  await buildah('rm', container);
  const layout = join(dir, 'layout');
  await buildah('push', '--quiet', 'localhost/pushed:v1', `oci:${layout}:v1`);
  return layout;
}
