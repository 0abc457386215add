/**
 * Start-up: time from spawning Slipway to a healthy `/v1/integrations/health` on an existing data
 * directory (median of 5), and idle memory of the platform's own processes IDLE_AFTER_MS (30 s) after
 * the healthy answer, median of the last 3 starts: the control-plane node process, what serves applications
 * beside it (the `all` role's separate Node edge process, DATA_DIR/edge/edge.pid, and/or HAProxy's master and
 * workers, DATA_DIR/edge/haproxy/haproxy.pid, the default edge where HAProxy is installed, its driver in the
 * control plane) and, reported apart, the embedded PostgreSQL
 * (postmaster and backends). PSS counts a page shared by several processes (the node binary's code,
 * PostgreSQL's shared buffers) once, split between them; RSS counts it in each.
 * Usage: tsx bench/startup.ts [command…]   (default: node dist/main.js; run `npm run build` first)
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const command = process.argv.slice(2).length ? process.argv.slice(2) : ['node', 'dist/main.js'];
const runs = 5;
const measuredRuns = 3;
const port = 20000 + Math.floor(Math.random() * 20000);
const dataDir = mkdtempSync(join(tmpdir(), 'slipway-startup-'));
const env = {
  ...process.env,
  DATA_DIR: dataDir,
  PORT: String(port),
  ROUTER_PORT: String(port + 1),
  EMBEDDED_PG_PORT: String(port + 2),
  HOST: '127.0.0.1',
  ADMIN_EMAIL: 'bench@example.com',
  ADMIN_PASSWORD: 'bench-password-123',
};

async function healthy(): Promise<boolean> {
  try {
    return (await fetch(`http://127.0.0.1:${port}/v1/integrations/health`)).ok;
  } catch {
    return false;
  }
}

interface Memory {
  rss: number;
  pss: number;
}
interface PlatformMemory {
  controlPlane: Memory;
  edge: Memory;
  postgres: Memory;
}

function processMemory(pid: number): Memory {
  try {
    const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const kib = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(rollup)?.[1] ?? 0);
    return { rss: kib('Rss') / 1024, pss: kib('Pss') / 1024 };
  } catch {
    return { rss: 0, pss: 0 }; // ended meanwhile
  }
}

function sum(memories: Memory[]): Memory {
  return memories.reduce((a, m) => ({ rss: a.rss + m.rss, pss: a.pss + m.pss }), { rss: 0, pss: 0 });
}

function pidFrom(file: string): number | null {
  try {
    const pid = Number(readFileSync(file, 'utf8').split('\n')[0]!.trim());
    return pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      /* ended meanwhile */
    }
  }
  const out: number[] = [];
  const stack = [...(children.get(root) ?? [])];
  while (stack.length) {
    const pid = stack.pop()!;
    out.push(pid);
    stack.push(...(children.get(pid) ?? []));
  }
  return out;
}

/** The edge's processes: a separate Node edge, HAProxy's master and workers (the default edge's daemon). */
function edgeProcesses(): { pids: number[]; kinds: string[] } {
  const edge = pidFrom(join(dataDir, 'edge', 'edge.pid'));
  const haproxy = pidFrom(join(dataDir, 'edge', 'haproxy', 'haproxy.pid'));
  const pids = [...(edge ? [edge] : []), ...(haproxy ? [haproxy, ...descendants(haproxy)] : [])];
  return { pids, kinds: [...(edge ? ['Node edge process'] : []), ...(haproxy ? [`HAProxy ×${pids.length - (edge ? 1 : 0)}`] : [])] };
}

let edgeKinds = '';

function platformMemory(controlPlane: number): PlatformMemory {
  const edge = edgeProcesses();
  edgeKinds = edge.kinds.join(' + ') || 'none';
  const postmaster = pidFrom(join(dataDir, 'postgres', 'postmaster.pid'));
  return {
    controlPlane: processMemory(controlPlane),
    edge: sum(edge.pids.map(processMemory)),
    postgres: postmaster ? sum([postmaster, ...descendants(postmaster)].map(processMemory)) : { rss: 0, pss: 0 },
  };
}

/** Idle means after start-up has settled: timers and pools at rest, the start's garbage collected. */
const IDLE_AFTER_MS = Number(process.env.IDLE_AFTER_MS ?? 30_000);

async function startOnce(measure: boolean): Promise<{ ms: number; memory?: PlatformMemory; early?: PlatformMemory }> {
  const started = performance.now();
  const child = spawn(command[0]!, command.slice(1), { env, stdio: 'ignore' });
  while (!(await healthy())) {
    if (child.exitCode !== null) throw new Error(`${command.join(' ')} exited with ${child.exitCode}`);
    if (performance.now() - started > 180_000) throw new Error('not healthy after 180 s');
    await sleep(25);
  }
  const ms = performance.now() - started;
  let memory: PlatformMemory | undefined;
  let early: PlatformMemory | undefined;
  if (measure) {
    await sleep(5000);
    early = platformMemory(child.pid!);
    await sleep(Math.max(0, IDLE_AFTER_MS - 5000));
    memory = platformMemory(child.pid!);
  }
  child.kill('SIGTERM');
  await new Promise((resolve) => child.once('exit', resolve));
  return { ms, memory, early };
}

function stopEdge() {
  // The edge outlives a stopped control plane (the next start adopts it): this run's ends with it.
  const edge = pidFrom(join(dataDir, 'edge', 'edge.pid'));
  if (edge && readFileSync(`/proc/${edge}/environ`, 'utf8').split('\0').includes(`DATA_DIR=${dataDir}`)) process.kill(edge, 'SIGTERM');
  const haproxy = pidFrom(join(dataDir, 'edge', 'haproxy', 'haproxy.pid'));
  if (haproxy && readFileSync(`/proc/${haproxy}/cmdline`, 'utf8').includes(dataDir)) process.kill(haproxy, 'SIGTERM');
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

try {
  const load = loadavg()[0]!.toFixed(2);
  await startOnce(false); // first start: initdb + migrations, not measured
  const times: number[] = [];
  const idle: PlatformMemory[] = [];
  const early: PlatformMemory[] = [];
  for (let i = 0; i < runs; i++) {
    const r = await startOnce(i >= runs - measuredRuns);
    times.push(r.ms);
    if (r.memory) idle.push(r.memory);
    if (r.early) early.push(r.early);
  }
  const mib = (n: number) => n.toFixed(0);
  const of = (samples: PlatformMemory[], part: keyof PlatformMemory, kind: keyof Memory) => median(samples.map((s) => s[part][kind]));
  const platformPss = (s: PlatformMemory) => s.controlPlane.pss + s.edge.pss;
  const describe = (samples: PlatformMemory[]) =>
    `control plane PSS ${mib(of(samples, 'controlPlane', 'pss'))} MiB (RSS ${mib(of(samples, 'controlPlane', 'rss'))}), ` +
    `edge (${edgeKinds}) PSS ${mib(of(samples, 'edge', 'pss'))} MiB (RSS ${mib(of(samples, 'edge', 'rss'))}), ` +
    `both ${mib(median(samples.map(platformPss)))} MiB PSS; ` +
    `PostgreSQL PSS ${mib(of(samples, 'postgres', 'pss'))} MiB (RSS ${mib(of(samples, 'postgres', 'rss'))})`;
  times.sort((a, b) => a - b);
  console.log(
    `${command.join(' ')} (load average ${load} at the start): start-to-healthy median ${(median(times) / 1000).toFixed(2)} s ` +
      `(runs ${times.map((t) => (t / 1000).toFixed(2)).join(', ')})\n` +
      `idle, ${IDLE_AFTER_MS / 1000} s after healthy, median of ${idle.length}: ${describe(idle)}\n` +
      `5 s after healthy, median of ${early.length}: ${describe(early)}`,
  );
} finally {
  try {
    stopEdge();
  } catch {
    /* already gone */
  }
  await sleep(2000);
  rmSync(dataDir, { recursive: true, force: true, maxRetries: 10, retryDelay: 500 });
}
