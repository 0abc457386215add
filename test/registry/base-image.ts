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
