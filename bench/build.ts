/**
 * Build time of a small Dockerfile app with the buildah builder (no registry push):
 *   cold     a fresh storage root holding only the base image (no layer cache)
 *   cached   the same context again (every step from the layer cache)
 *   changed  one source file changed (steps from its COPY on re-run)
 * Each phase runs --runs times (default 5); prints the median and range in ms, then JSON.
 * With --sandboxed, buildah runs in the application's sandbox (as the platform runs it
 * unless RUNTIME_ISOLATION=none; a fixed uid stands in for the allocator), its cold build
 * including the copy of the base image into the application's own storage.
 *
 * With --compare (issue 35), one run interleaves, round by round, the same Dockerfile (a
 * `RUN --mount=type=cache` step, a base image of --base-mib of data) built by:
 *   plain     `buildah build --layers` as root on its own overlay storage, nothing else
 *             (the baseline: no sandbox, no copy of the base image, no unpacking)
 *   vfs       Slipway's builder, sandboxed, vfs storage (each layer a full copy)
 *   overlay   Slipway's builder, sandboxed, overlay storage (kernel overlayfs in the user namespace)
 * and prints each one's medians and its ratio to plain, with the load average.
 *
 *   npx tsx bench/build.ts [--runs 5] [--sandboxed]
 *   npx tsx bench/build.ts --compare [--runs 3] [--base-mib 64] [--rows vfs,overlay] [--log]   (--log: each build's log, timed)
 *
 * Needs buildah and busybox-static (apt-get install buildah busybox-static); --sandboxed and --compare need root and bubblewrap.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { BuildahBuilder, findOnPath, type StorageDriver } from '../src/platform/builder/buildah.js';
import type { BuildInput } from '../src/platform/builder/port.js';
import { run } from '../src/platform/git/command.js';
import { Sandbox } from '../src/platform/sandbox/index.js';
import { BASE_IMAGE, buildBusyboxBase } from '../test/registry/base-image.js';

const arg = (name: string) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : undefined);
const COMPARE = process.argv.includes('--compare');
const LOG = process.argv.includes('--log');
const RUNS = Number(arg('--runs')) || (COMPARE ? 3 : 5);
const BASE_MIB = Number(arg('--base-mib')) || 64;
/** --rows plain,overlay: only these rows of the comparison (plain is always run: it is the ratio's base). */
const ROWS = new Set(['plain', ...(arg('--rows') ?? 'vfs,overlay').split(',')]);
const newSandbox = () => new Sandbox({ uids: { uidFor: async () => 250_000 }, pidsMax: 1024 });
const sandbox = process.argv.includes('--sandboxed') ? newSandbox() : null;
const DOCKERFILE = `FROM ${BASE_IMAGE}
ARG GREETING
RUN mkdir -p /www && echo "$GREETING" > /www/greeting.txt
COPY index.html /www/
WORKDIR /www
CMD httpd -f -p $PORT -h /www
`;
/** The comparison's Dockerfile: a cache mount (what a package manager's download cache would be) before the COPY. */
const CACHE_MOUNT_DOCKERFILE = `FROM ${BASE_IMAGE}
ARG GREETING
RUN --mount=type=cache,target=/cache sh -c 'echo build >> /cache/builds; mkdir -p /www; wc -l < /cache/builds > /www/builds.txt'
COPY index.html /www/
WORKDIR /www
CMD httpd -f -p $PORT -h /www
`;

const median = (ms: number[]) => [...ms].sort((a, b) => a - b)[Math.floor(ms.length / 2)]!;

function summarize(results: Record<string, number[]>) {
  return Object.fromEntries(
    Object.entries(results).map(([phase, ms]) => {
      const sorted = [...ms].sort((a, b) => a - b);
      return [
        phase,
        { median_ms: Math.round(median(ms)), min_ms: Math.round(sorted[0]!), max_ms: Math.round(sorted.at(-1)!), runs: ms.length },
      ];
    }),
  );
}

async function must(file: string, args: string[], cwd?: string) {
  const r = await run(file, args, { timeoutMs: 600_000, cwd });
  if (r.code !== 0) throw new Error(`${file} ${args.join(' ')}: ${r.stderr.trim().split('\n').slice(-3).join(' ')}`);
  return r.stdout;
}

/** The busybox base image with `mib` MiB of incompressible data in /filler: a stand-in for a language base image. */
async function buildBase(storageRoot: string, mib: number) {
  await buildBusyboxBase(storageRoot);
  if (mib === 0) return;
  const buildah = (...args: string[]) =>
    must('buildah', ['--root', join(storageRoot, 'storage'), '--runroot', join(storageRoot, 'run'), '--storage-driver', 'vfs', ...args]);
  const container = (await buildah('from', '--pull=false', BASE_IMAGE)).trim();
  const mount = (await buildah('mount', container)).trim();
  await must('sh', ['-c', `head -c ${mib * 1024 * 1024} /dev/urandom > ${mount}/filler`]);
  await buildah('commit', '-q', container, BASE_IMAGE);
  await buildah('rm', container);
}

async function main() {
  for (const [binary, pkg] of [
    ['buildah', 'buildah'],
    ['busybox', 'busybox-static'],
  ]) {
    if (!findOnPath(binary!)) throw new Error(`${binary} is not installed (apt-get install ${pkg})`);
  }
  const work = mkdtempSync(join(tmpdir(), 'slipway-bench-build-'));
  try {
    let version = 0;
    const context = (index: string, dockerfile: string) => {
      version++;
      const ctx = join(work, `ctx-${version}`);
      mkdirSync(ctx);
      writeFileSync(join(ctx, 'Dockerfile'), dockerfile);
      writeFileSync(join(ctx, 'index.html'), index);
      return ctx;
    };
    // One builder per storage and driver, kept between its builds as the server keeps its one builder
    // (what it remembers, such as the shared storage's base-image ids, is part of what a rebuild costs).
    const builders = new Map<string, BuildahBuilder>();
    const builderFor = (storageRoot: string, options: { driver?: StorageDriver; sandbox?: Sandbox | null }) => {
      const key = `${storageRoot}|${options.driver ?? ''}|${options.sandbox === null ? 'unconfined' : 'sandboxed'}`;
      let builder = builders.get(key);
      if (!builder) {
        builder = new BuildahBuilder({
          storageRoot,
          registry: null,
          sandbox: options.sandbox === undefined ? sandbox : options.sandbox,
          storageDriver: options.driver,
        });
        builders.set(key, builder);
      }
      return builder;
    };
    const build = async (
      storageRoot: string,
      index: string,
      options: { dockerfile?: string; driver?: StorageDriver; sandbox?: Sandbox | null } = {},
    ) => {
      const ctx = context(index, options.dockerfile ?? DOCKERFILE);
      const t0 = Date.now();
      const input: BuildInput = {
        applicationId: 'bench',
        version,
        repositoryName: 'bench/app/web',
        contextDir: ctx,
        artifactDir: join(work, 'artifacts', String(version)),
        buildEnv: { GREETING: 'hello' },
        secrets: [],
        procfileProcesses: null,
        // --log prints each build's log with the milliseconds since its start (where a build's time goes).
        log: LOG
          ? {
              line: (l) => void console.log(`  ${String(Date.now() - t0).padStart(6)} ms  ${l}`),
              substep: () => {},
              enter: (s) => void console.log(`  ${String(Date.now() - t0).padStart(6)} ms  [${s}]`),
            }
          : { line: () => {}, substep: () => {} },
        signal: new AbortController().signal,
        timeoutMs: 600_000,
        cacheScope: { name: 'bench', throwaway: false },
      };
      const started = process.hrtime.bigint();
      await builderFor(storageRoot, options).build(input);
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      rmSync(ctx, { recursive: true, force: true });
      rmSync(input.artifactDir, { recursive: true, force: true });
      return ms;
    };

    if (COMPARE) return await compare(work, build, context);

    const results: Record<string, number[]> = { cold: [], cached: [], changed: [] };
    for (let i = 0; i < RUNS; i++) {
      const storage = join(work, `storage-${i}`);
      await buildBusyboxBase(storage);
      results.cold!.push(await build(storage, `<p>v${i}</p>`));
      results.cached!.push(await build(storage, `<p>v${i}</p>`));
      results.changed!.push(await build(storage, `<p>v${i} changed</p>`));
      rmSync(storage, { recursive: true, force: true });
    }
    const summary = summarize(results);
    for (const [phase, s] of Object.entries(summary)) {
      console.log(`${phase.padEnd(8)} median ${s.median_ms} ms (min ${s.min_ms}, max ${s.max_ms}, ${s.runs} runs)`);
    }
    console.log(JSON.stringify({ benchmark: 'dockerfile-build', builder: 'buildah vfs chroot', sandboxed: sandbox !== null, ...summary }));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

type Build = (
  storageRoot: string,
  index: string,
  options: { dockerfile?: string; driver?: StorageDriver; sandbox?: Sandbox | null },
) => Promise<number>;

async function compare(work: string, build: Build, context: (index: string, dockerfile: string) => string) {
  const box = newSandbox();
  const load: number[] = [];
  const results: Record<string, Record<'cold' | 'changed', number[]>> = {
    plain: { cold: [], changed: [] },
    vfs: { cold: [], changed: [] },
    overlay: { cold: [], changed: [] },
  };
  for (let i = 0; i < RUNS; i++) {
    load.push(loadavg()[0]!);
    // The operator's shared storage with the base image, fresh each round (as on a new machine).
    const shared = join(work, `shared-${i}`);
    await buildBase(shared, BASE_MIB);
    const layout = join(work, `base-${i}`);
    await must('buildah', [
      '--root',
      join(shared, 'storage'),
      '--runroot',
      join(shared, 'run'),
      '--storage-driver',
      'vfs',
      'push',
      '--quiet',
      BASE_IMAGE,
      `oci:${layout}`,
    ]);

    // plain: buildah as root, its own overlay storage holding the base image, cache mounts below its TMPDIR.
    const plainRoot = join(work, `plain-${i}`);
    const plain = ['--root', join(plainRoot, 'storage'), '--runroot', join(plainRoot, 'run'), '--storage-driver', 'overlay'];
    mkdirSync(join(plainRoot, 'tmp'), { recursive: true });
    // Relative to `work`: buildah names the image after the path, which must be lower case.
    const pulled = (await must('buildah', [...plain, 'pull', '--quiet', `oci:base-${i}`], work)).trim().split('\n').pop()!;
    await must('buildah', [...plain, 'tag', pulled, BASE_IMAGE]);
    const plainBuild = async (index: string) => {
      const ctx = context(index, CACHE_MOUNT_DOCKERFILE);
      const t0 = Date.now();
      const started = process.hrtime.bigint();
      const r = await run(
        'buildah',
        [
          ...plain,
          'bud',
          '--isolation',
          'chroot',
          '--layers',
          '--pull=false',
          '--build-arg',
          'GREETING=hello',
          '-t',
          'localhost/bench/app/web:latest',
          ctx,
        ],
        {
          timeoutMs: 600_000,
          env: { ...process.env, TMPDIR: join(plainRoot, 'tmp') },
          // --log: plain's own steps, timed the same way (where its time goes, beside ours).
          ...(LOG ? { onLine: (l: string) => void console.log(`  ${String(Date.now() - t0).padStart(6)} ms  plain: ${l}`) } : {}),
        },
      );
      if (r.code !== 0) throw new Error(`plain buildah: ${r.stderr.trim().split('\n').slice(-3).join(' ')}`);
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      rmSync(ctx, { recursive: true, force: true });
      return ms;
    };

    for (const row of ['plain', 'vfs', 'overlay'] as const) {
      if (!ROWS.has(row)) continue;
      const phases = results[row]!;
      if (row === 'plain') {
        phases.cold.push(await plainBuild(`<p>v${i}</p>`));
        phases.changed.push(await plainBuild(`<p>v${i} changed</p>`));
        continue;
      }
      const options = { dockerfile: CACHE_MOUNT_DOCKERFILE, driver: row, sandbox: box };
      phases.cold.push(await build(shared, `<p>v${i}</p>`, options));
      phases.changed.push(await build(shared, `<p>v${i} changed</p>`, options));
      // The application's storage goes with the round (the next round's cold build starts empty).
      rmSync(join(shared, 'apps'), { recursive: true, force: true });
    }
    rmSync(plainRoot, { recursive: true, force: true });
    rmSync(shared, { recursive: true, force: true });
    rmSync(layout, { recursive: true, force: true });
  }
  const base = { cold: median(results.plain!.cold), changed: median(results.plain!.changed) };
  console.log(
    `Dockerfile with a cache mount, base image + ${BASE_MIB} MiB, ${RUNS} interleaved rounds, load average ${load.map((l) => l.toFixed(1)).join(', ')}`,
  );
  const out: Record<string, unknown> = {};
  for (const [row, phases] of Object.entries(results)) {
    if (!ROWS.has(row)) continue;
    const s = summarize(phases);
    out[row] = s;
    console.log(
      `${row.padEnd(8)} cold ${s.cold!.median_ms} ms (${s.cold!.min_ms}–${s.cold!.max_ms}, ${(s.cold!.median_ms / base.cold).toFixed(2)}×)  ` +
        `changed ${s.changed!.median_ms} ms (${s.changed!.min_ms}–${s.changed!.max_ms}, ${(s.changed!.median_ms / base.changed).toFixed(2)}×)`,
    );
  }
  console.log(JSON.stringify({ benchmark: 'dockerfile-build-compare', base_mib: BASE_MIB, load_average: load, ...out }));
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
