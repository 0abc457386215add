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
 *   npx tsx bench/build.ts [--runs 5] [--sandboxed]
 *
 * Needs buildah and busybox-static (apt-get install buildah busybox-static); --sandboxed needs root and bubblewrap.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BuildahBuilder, findOnPath } from '../src/platform/builder/buildah.js';
import type { BuildInput } from '../src/platform/builder/port.js';
import { Sandbox } from '../src/platform/sandbox/index.js';
import { BASE_IMAGE, buildBusyboxBase } from '../test/registry/base-image.js';

const RUNS = Number(process.argv[process.argv.indexOf('--runs') + 1]) || 5;
const sandbox = process.argv.includes('--sandboxed') ? new Sandbox({ uids: { uidFor: async () => 250_000 }, pidsMax: 1024 }) : null;
const DOCKERFILE = `FROM ${BASE_IMAGE}
ARG GREETING
RUN mkdir -p /www && echo "$GREETING" > /www/greeting.txt
COPY index.html /www/
WORKDIR /www
CMD httpd -f -p $PORT -h /www
`;

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
    const build = async (storageRoot: string, index: string) => {
      version++;
      const ctx = join(work, `ctx-${version}`);
      mkdirSync(ctx);
      writeFileSync(join(ctx, 'Dockerfile'), DOCKERFILE);
      writeFileSync(join(ctx, 'index.html'), index);
      const input: BuildInput = {
        applicationId: 'bench',
        version,
        repositoryName: 'bench/app/web',
        contextDir: ctx,
        artifactDir: join(work, 'artifacts', String(version)),
        buildEnv: { GREETING: 'hello' },
        secrets: [],
        procfileProcesses: null,
        log: { line: () => {}, substep: () => {} },
        signal: new AbortController().signal,
        timeoutMs: 300_000,
        cacheScope: { name: 'bench', throwaway: false },
      };
      const started = process.hrtime.bigint();
      await new BuildahBuilder({ storageRoot, registry: null, sandbox }).build(input);
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      rmSync(ctx, { recursive: true, force: true });
      rmSync(input.artifactDir, { recursive: true, force: true });
      return ms;
    };

    const results: Record<string, number[]> = { cold: [], cached: [], changed: [] };
    for (let i = 0; i < RUNS; i++) {
      const storage = join(work, `storage-${i}`);
      await buildBusyboxBase(storage);
      results.cold!.push(await build(storage, `<p>v${i}</p>`));
      results.cached!.push(await build(storage, `<p>v${i}</p>`));
      results.changed!.push(await build(storage, `<p>v${i} changed</p>`));
      rmSync(storage, { recursive: true, force: true });
    }
    const summary = Object.fromEntries(
      Object.entries(results).map(([phase, ms]) => {
        const sorted = [...ms].sort((a, b) => a - b);
        return [
          phase,
          {
            median_ms: Math.round(sorted[Math.floor(sorted.length / 2)]!),
            min_ms: Math.round(sorted[0]!),
            max_ms: Math.round(sorted.at(-1)!),
            runs: ms.length,
          },
        ];
      }),
    );
    for (const [phase, s] of Object.entries(summary)) {
      console.log(`${phase.padEnd(8)} median ${s.median_ms} ms (min ${s.min_ms}, max ${s.max_ms}, ${s.runs} runs)`);
    }
    console.log(JSON.stringify({ benchmark: 'dockerfile-build', builder: 'buildah vfs chroot', sandboxed: sandbox !== null, ...summary }));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
