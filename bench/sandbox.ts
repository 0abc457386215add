/**
 * The sandbox's cost (issues 10 and 27), median of N runs each with and without it:
 * - instance start: `LocalProcessDriver.start` of a small Python web app until it answers
 *   its health check through the host loopback port (uid lookup, cgroup creation, bubblewrap
 *   and setpriv, its own network namespace, pasta's outbound and forward included; the
 *   third variant without outbound: pasta for the forward only);
 * - a source build: `SourceBuilder.build` of a Python app with a requirements.txt (two
 *   build commands: the virtualenv and pip) and a one-command `slipway.json` build.
 *
 *   npx tsx bench/sandbox.ts [--runs 5]
 *
 * Needs root, bubblewrap and pasta (passt). No database: a fixed uid stands in for the allocator.
 */
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SourceBuilder } from '../src/platform/builder/source-builder.js';
import { probe } from '../src/platform/runtime/health-check.js';
import { LocalProcessDriver } from '../src/platform/runtime/local/local-driver.js';
import { Sandbox } from '../src/platform/sandbox/index.js';

const runsArg = process.argv.indexOf('--runs');
const runs = runsArg > 0 ? Number(process.argv[runsArg + 1]) || 5 : 5;
const APP = `import http.server, os
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b'ok')
http.server.ThreadingHTTPServer(('127.0.0.1', int(os.environ['PORT'])), H).serve_forever()
`;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (xs: number[]) => `median ${median(xs).toFixed(0)} ms (min ${Math.min(...xs).toFixed(0)}, max ${Math.max(...xs).toFixed(0)})`;
const labels = (n: number) => ({
  applicationId: '00000000-0000-7000-8000-000000000001',
  environmentId: 'e',
  releaseId: 'r',
  deploymentId: 'd',
  processType: 'web',
  ordinal: n,
});

/** One start of the app until it answers (then stopped). */
async function instanceStart(driver: LocalProcessDriver, dir: string, i: number): Promise<number> {
  const started = performance.now();
  const s = await driver.start({
    id: `00000000-0000-7000-8000-${String(i).padStart(12, '0')}`,
    labels: labels(i + 1),
    command: 'python3 server.py',
    artifactPath: dir,
    env: {},
    listen: true,
    secrets: [],
    limits: { cpuMillicores: 1000, memoryBytes: 1536 * 1024 * 1024, podClass: 'm1.large' },
  });
  for (;;) {
    if (await probe({ host: s.host!, port: s.port!, path: '/' }, 500)) break;
    await new Promise((r) => setTimeout(r, 5));
  }
  const elapsed = performance.now() - started;
  await driver.stop(s.id);
  return elapsed;
}

/** One source build of a Python app (virtualenv + pip install of an empty requirements.txt). */
async function build(root: string, builder: SourceBuilder, source: string, name: string): Promise<number> {
  const context = join(root, `context-${name}`);
  cpSync(source, context, { recursive: true });
  const started = performance.now();
  await builder.build({
    applicationId: '00000000-0000-7000-8000-000000000001',
    version: 1,
    repositoryName: 'o/p/a',
    contextDir: context,
    artifactDir: join(root, 'images', name),
    buildEnv: {},
    secrets: [],
    procfileProcesses: { web: { cmd: 'python3 server.py', env: {} } },
    log: { line() {}, substep() {} },
    signal: new AbortController().signal,
    timeoutMs: 120_000,
    cacheScope: { name: 'bench', throwaway: false },
  });
  return performance.now() - started;
}

async function main() {
  // The same programs for both: this machine's PATH starts with pyenv shims under /root,
  // which the sandbox hides (so `python3` would be a different, faster program inside it).
  process.env.PATH = '/usr/local/bin:/usr/bin:/bin';
  const root = mkdtempSync(join(tmpdir(), 'slipway-bench-sandbox-'));
  const sandbox = new Sandbox({ uids: { uidFor: async () => 299_999 }, pidsMax: 1024 });
  const closed = new Sandbox({ uids: { uidFor: async () => 299_999 }, pidsMax: 1024, outbound: false });
  await sandbox.ready();
  const slug = (name: string) => {
    const dir = join(root, name);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'server.py'), APP);
    return dir;
  };
  const source = slug('source');
  writeFileSync(join(source, 'requirements.txt'), '');
  // Alternating runs, so neither variant gets the warm caches.
  const plain = {
    start: [] as number[],
    build: [] as number[],
    driver: new LocalProcessDriver({ logDir: join(root, 'logs'), stopGraceMs: 1000 }),
    builder: new SourceBuilder(join(root, 'cache')),
  };
  const boxed = {
    start: [] as number[],
    build: [] as number[],
    driver: new LocalProcessDriver({ logDir: join(root, 'logs'), stopGraceMs: 1000, sandbox }),
    builder: new SourceBuilder(join(root, 'cache'), sandbox),
  };
  const offline = {
    start: [] as number[],
    build: [] as number[],
    driver: new LocalProcessDriver({ logDir: join(root, 'logs'), stopGraceMs: 1000, sandbox: closed }),
    builder: new SourceBuilder(join(root, 'cache'), closed),
  };
  try {
    const plainDir = slug('slug-plain');
    const boxedDir = slug('slug-boxed');
    const offlineDir = slug('slug-offline');
    for (let i = 0; i < runs; i++) {
      plain.start.push(await instanceStart(plain.driver, plainDir, 3 * i));
      boxed.start.push(await instanceStart(boxed.driver, boxedDir, 3 * i + 1));
      offline.start.push(await instanceStart(offline.driver, offlineDir, 3 * i + 2));
      plain.build.push(await build(root, plain.builder, source, `p${i}`));
      boxed.build.push(await build(root, boxed.builder, source, `s${i}`));
      offline.build.push(await build(root, offline.builder, source, `o${i}`));
    }
    await plain.driver.shutdown();
    await boxed.driver.shutdown();
    await offline.driver.shutdown();
    console.log(`instance start, unconfined: ${fmt(plain.start)}`);
    console.log(`instance start, sandboxed:  ${fmt(boxed.start)}  difference ${(median(boxed.start) - median(plain.start)).toFixed(0)} ms`);
    console.log(
      `instance start, no outbound: ${fmt(offline.start)}  difference ${(median(offline.start) - median(plain.start)).toFixed(0)} ms`,
    );
    console.log(`python build, unconfined:   ${fmt(plain.build)}`);
    console.log(`python build, sandboxed:    ${fmt(boxed.build)}  difference ${(median(boxed.build) - median(plain.build)).toFixed(0)} ms`);
    console.log(
      `python build, no outbound:  ${fmt(offline.build)}  difference ${(median(offline.build) - median(plain.build)).toFixed(0)} ms`,
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

await main();
