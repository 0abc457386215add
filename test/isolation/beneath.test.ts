import { execFileSync, spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  chmodBeneath,
  existsBeneath,
  holdDirectoryBeneath,
  readTextBeneath,
  statBeneath,
  UnsafePathError,
  walkTreeBeneath,
  type TreeEntry,
} from '../../src/platform/fs/beneath.js';
import { directoryDigest } from '../../src/platform/builder/digest.js';
import { removeTreeBeneath } from '../../src/platform/storage/disk-usage.js';

/**
 * The guarded opener privileged code uses on tenant-writable trees (issue 27, class 1): no
 * symlink is followed at any component, nothing leaves the root, FIFOs and devices are never
 * opened for reading, sizes are bounded, and errors name the relative path only.
 */
const SECRET = 'host-secret-b81f2c';
let work: string;
let root: string;
let outside: string;

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'slipway-beneath-'));
  root = join(work, 'tree');
  outside = join(work, 'outside');
  mkdirSync(join(root, 'sub', 'deeper'), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(outside, 'secret.key'), SECRET);
  writeFileSync(join(root, 'Procfile'), 'web: serve\n');
  writeFileSync(join(root, 'sub', 'deeper', 'file.txt'), 'inside');
  symlinkSync(join(outside, 'secret.key'), join(root, 'link-to-secret'));
  symlinkSync('../outside', join(root, 'linked-dir'));
  symlinkSync(outside, join(root, 'sub', 'abs-dir'));
  writeFileSync(join(root, 'huge'), Buffer.alloc(2 * 1024 * 1024, 'x'));
  execFileSync('mkfifo', [join(root, 'fifo')]);
});

afterAll(() => {
  rmSync(work, { recursive: true, force: true });
});

async function refusal(p: Promise<unknown>): Promise<UnsafePathError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(UnsafePathError);
  expect((err as Error).message).not.toContain(SECRET);
  expect((err as Error).message).not.toContain(work);
  return err as UnsafePathError;
}

describe('opening paths beneath a tenant-writable root', () => {
  it('reads regular files inside and answers null for absent ones', async () => {
    expect(await readTextBeneath(root, 'Procfile', 1024)).toBe('web: serve\n');
    expect(await readTextBeneath(root, 'sub/deeper/file.txt', 1024)).toBe('inside');
    expect(await readTextBeneath(root, './sub/./deeper/file.txt', 1024)).toBe('inside');
    expect(await readTextBeneath(root, 'missing', 1024)).toBeNull();
    expect(await readTextBeneath(root, 'missing/deeper/x', 1024)).toBeNull();
    expect(await existsBeneath(root, 'Procfile')).toBe(true);
    expect(await existsBeneath(root, 'nothing-here')).toBe(false);
  });

  it('refuses a symlink as the last component, naming only the relative path', async () => {
    const err = await refusal(readTextBeneath(root, 'link-to-secret', 1024));
    expect(err.message).toBe('link-to-secret is a symbolic link');
    expect((await statBeneath(root, 'link-to-secret'))?.kind).toBe('symlink');
    expect(await existsBeneath(root, 'link-to-secret')).toBe(true);
  });

  it('refuses a symlink as an intermediate directory (relative or absolute target)', async () => {
    expect((await refusal(readTextBeneath(root, 'linked-dir/secret.key', 1024))).message).toBe('linked-dir is a symbolic link');
    expect((await refusal(readTextBeneath(root, 'sub/abs-dir/secret.key', 1024))).message).toBe('sub/abs-dir is a symbolic link');
    await refusal(statBeneath(root, 'sub/abs-dir/secret.key'));
    await refusal(existsBeneath(root, 'linked-dir/secret.key'));
  });

  it('refuses "..", absolute paths and empty components before opening anything', async () => {
    await refusal(readTextBeneath(root, '../outside/secret.key', 1024));
    await refusal(readTextBeneath(root, 'sub/../../outside/secret.key', 1024));
    await refusal(readTextBeneath(root, join(outside, 'secret.key'), 1024));
    await refusal(readTextBeneath(root, 'sub//deeper/file.txt', 1024));
  });

  it('refuses a root that is itself a symlink', async () => {
    const linkedRoot = join(work, 'linked-root');
    symlinkSync(outside, linkedRoot);
    await refusal(readTextBeneath(linkedRoot, 'secret.key', 1024));
  });

  it('never opens a FIFO or a device for reading, and refuses directories and files past the limit', async () => {
    // A FIFO opened for reading would block forever: it is refused from its fstat alone.
    expect((await refusal(readTextBeneath(root, 'fifo', 1024))).message).toBe('fifo is not a regular file');
    expect((await refusal(readTextBeneath(root, 'sub', 1024))).message).toBe('sub is not a regular file');
    expect((await refusal(readTextBeneath(root, 'huge', 64 * 1024))).message).toBe('huge is larger than 65536 bytes');
  });

  it('keeps walking the directory it opened when a tenant swaps it for a symlink mid-walk', async () => {
    const tree = join(work, 'swap');
    mkdirSync(join(tree, 'a'), { recursive: true });
    writeFileSync(join(tree, 'a', 'own.txt'), 'own');
    const seen: TreeEntry[] = [];
    await walkTreeBeneath(tree, async (entry) => {
      seen.push(entry);
      if (entry.rel === 'a') {
        // The swap lands between the walk's look at `a` and its descent into it.
        renameSync(join(tree, 'a'), join(tree, 'a-moved'));
        symlinkSync(outside, join(tree, 'a'));
      }
      if (entry.kind === 'file') for await (const chunk of entry.chunks()) expect(chunk.toString()).not.toContain(SECRET);
    });
    expect(seen.map((e) => e.rel)).toEqual(['a', 'a/own.txt']);
    // A fresh walk sees the planted symlink as a symlink (its text, never its target's content).
    const again: TreeEntry[] = [];
    await walkTreeBeneath(tree, async (e) => void again.push(e));
    expect(again.find((e) => e.rel === 'a')).toMatchObject({ kind: 'symlink', target: outside });
    expect(again.some((e) => e.rel.startsWith('a/'))).toBe(false);
  });

  it('digests a tree without reading through symlinks or FIFOs', async () => {
    const digest = await directoryDigest(root);
    expect(digest.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    // Procfile, huge, sub/deeper/file.txt: symlinks and the FIFO are recorded, not read.
    expect(digest.files).toBe(3);
    const tree = join(work, 'deep');
    let path = tree;
    for (let i = 0; i < 300; i++) path = join(path, 'd');
    mkdirSync(path, { recursive: true });
    await refusal(directoryDigest(tree));
  });

  it('acts in the directory it holds even when its path is replaced by a symlink', async () => {
    const tree = join(work, 'held');
    mkdirSync(join(tree, 'dev'), { recursive: true });
    const held = await holdDirectoryBeneath(tree, 'dev');
    expect(held).not.toBeNull();
    try {
      renameSync(join(tree, 'dev'), join(tree, 'dev-moved'));
      symlinkSync(outside, join(tree, 'dev'));
      execFileSync('touch', [join(held!.path, 'made-here')]);
    } finally {
      await held!.close();
    }
    expect(existsSync(join(tree, 'dev-moved', 'made-here'))).toBe(true);
    expect(existsSync(join(outside, 'made-here'))).toBe(false);
    await refusal(holdDirectoryBeneath(tree, 'dev'));
  });

  it('changes modes without following a symlink', async () => {
    const tree = join(work, 'modes');
    mkdirSync(join(tree, 'own'), { recursive: true });
    symlinkSync(outside, join(tree, 'link'));
    const before = statSync(outside).mode & 0o777;
    await chmodBeneath(tree, 'own', 0o700);
    expect(statSync(join(tree, 'own')).mode & 0o777).toBe(0o700);
    await refusal(chmodBeneath(tree, 'link', 0o777));
    expect(statSync(outside).mode & 0o777).toBe(before);
    expect(readFileSync(join(outside, 'secret.key'), 'utf8')).toBe(SECRET);
  });
});

describe('removing a tree a tenant process may still be writing', () => {
  const FILES = 3000;
  const names = Array.from({ length: FILES }, (_, i) => `f${String(i).padStart(4, '0')}`);

  it("removes a directory swapped for a symlink mid-removal as a link, never the link target's files", async () => {
    // A race: on a loaded machine the removal may finish before the tenant is scheduled to swap. Such an
    // attempt proves nothing, so it is tried again (a fresh tree) until the swap lands mid-removal.
    let swapped = false;
    for (let attempt = 1; attempt <= 5 && !swapped; attempt++) swapped = await swapMidRemoval();
    expect(swapped, 'the tenant swapped bait/ for a link mid-removal in one of 5 attempts').toBe(true);
  }, 120_000);

  /** One attempt: false when the removal finished before the tenant swapped (nothing to conclude). */
  async function swapMidRemoval(): Promise<boolean> {
    const base = mkdtempSync(join(tmpdir(), 'slipway-remove-'));
    try {
      const tree = join(base, 'images', 'app', '7');
      const hostFiles = join(base, 'host');
      mkdirSync(join(tree, 'app', 'bait'), { recursive: true });
      mkdirSync(hostFiles);
      for (const name of names) {
        writeFileSync(join(tree, 'app', 'bait', name), '');
        writeFileSync(join(hostFiles, name), 'host file');
      }
      // The tenant: as soon as a file of bait/ is gone, bait/ becomes a link to the host's files.
      const swapper = spawn('python3', [
        '-c',
        `import os, sys, time
bait = sys.argv[1]
print('watching', flush=True)
while all(os.path.lexists(os.path.join(bait, 'f%04d' % i)) for i in range(0, ${FILES}, 50)):
    pass
os.rename(bait, bait + '.moved')
os.symlink(sys.argv[2], bait)
print('swapped', flush=True)`,
        join(tree, 'app', 'bait'),
        hostFiles,
      ]);
      const exited = new Promise((resolve) => swapper.on('exit', resolve));
      let out = '';
      const watching = new Promise<void>((resolve) =>
        swapper.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.includes('watching')) resolve();
        }),
      );
      await watching;
      await removeTreeBeneath(join(base, 'images', 'app'), tree).catch(() => {});
      await exited;
      // Whether or not the swap landed, the link's target keeps every file.
      expect(readdirSync(hostFiles)).toHaveLength(FILES);
      if (!out.includes('swapped')) return false;
      // What the tenant left (the moved directory, the link) goes on the next pass; the link's target stays.
      await removeTreeBeneath(join(base, 'images', 'app'), tree);
      expect(existsSync(tree)).toBe(false);
      expect(readdirSync(hostFiles)).toHaveLength(FILES);
      return true;
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  }
});
