/**
 * The sandbox's cost (issue 10), median of N runs each with and without it:
 * - instance start: `LocalProcessDriver.start` of a small Python web app until it answers
 *   its health check (uid lookup, cgroup creation, bubblewrap and setpriv included);
 * - a source build: `SourceBuilder.build` of a Python app with a requirements.txt (two
 *   build commands: the virtualenv and pip) and a one-command `slipway.json` build.
 *
 *   npx tsx bench/sandbox.ts [--runs 5]
 *
 * Needs root and bubblewrap. No database: a fixed uid stands in for the allocator.
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
const labels = (n: number) => ({ applicationId: '00000000-0000-7000-8000-000000000001', environmentId: 'e', releaseId: 'r', deploymentId: 'd', processType: 'web', ordinal: n });

async function instanceStart(root: string, sandbox: Sandbox | null): Promise<number[]> {
  const dir = join(root, sandbox ? 'slug-sandboxed' : 'slug-plain');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'server.py'), APP);
  const driver = new LocalProcessDriver({ logDir: join(root, 'logs'), stopGraceMs: 1000, sandbox });
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    const s = await driver.start({
      id: `00000000-0000-7000-8000-00000000010${i}`, labels: labels(i + 1), command: 'python3 server.py', artifactPath: dir, env: {}, listen: true, secrets: [],
      limits: { cpuMillicores: 1000, memoryBytes: 1536 * 1024 * 1024, podClass: 'm1.large' },
    });
    for (;;) {
      if (await probe({ host: s.host!, port: s.port!, path: '/' }, 500)) break;
      await new Promise((r) => setTimeout(r, 5));
    }
    times.push(performance.now() - started);
    await driver.stop(s.id);
  }
  await driver.shutdown();
  return times;
}

async function build(root: string, sandbox: Sandbox | null): Promise<number[]> {
  const source = join(root, 'source');
  mkdirSync(source, { recursive: true });
  writeFileSync(join(source, 'server.py'), APP);
  writeFileSync(join(source, 'requirements.txt'), '');
  const builder = new SourceBuilder(join(root, 'cache'), sandbox);
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const context = join(root, `context-${sandbox ? 's' : 'p'}-${i}`);
    cpSync(source, context, { recursive: true });
    const started = performance.now();
    await builder.build({
      applicationId: '00000000-0000-7000-8000-000000000001', version: i + 1, repositoryName: 'o/p/a', contextDir: context,
      artifactDir: join(root, 'images', `${sandbox ? 's' : 'p'}-${i}`), buildEnv: {}, secrets: [], procfileProcesses: { web: { cmd: 'python3 server.py', env: {} } },
      log: { line() {}, substep() {} }, signal: new AbortController().signal, timeoutMs: 120_000,
    });
    times.push(performance.now() - started);
  }
  return times;
}

async function main() {
  const root = mkdtempSync(join(tmpdir(), 'slipway-bench-sandbox-'));
  const sandbox = new Sandbox({ uids: { uidFor: async () => 299_999 }, pidsMax: 1024 });
  await sandbox.ready();
  try {
    const plainStart = await instanceStart(root, null);
    const boxedStart = await instanceStart(root, sandbox);
    const plainBuild = await build(root, null);
    const boxedBuild = await build(root, sandbox);
    console.log(`instance start, unconfined: ${fmt(plainStart)}`);
    console.log(`instance start, sandboxed:  ${fmt(boxedStart)}  overhead ${(median(boxedStart) - median(plainStart)).toFixed(0)} ms`);
    console.log(`python build, unconfined:   ${fmt(plainBuild)}`);
    console.log(`python build, sandboxed:    ${fmt(boxedBuild)}  overhead ${(median(boxedBuild) - median(plainBuild)).toFixed(0)} ms`);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

await main();
