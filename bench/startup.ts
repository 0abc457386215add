/**
 * Start-up: time from spawning Slipway to a healthy `/v1/integrations/health` on an existing data
 * directory (median of 5), and idle memory (RSS and PSS) of the node process plus its embedded PostgreSQL,
 * 30 s after the healthy answer (IDLE_AFTER_MS) and, for comparison, 5 s after.
 * Usage: tsx bench/startup.ts [command…]   (default: node dist/main.js; run `npm run build` first)
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const command = process.argv.slice(2).length ? process.argv.slice(2) : ['node', 'dist/main.js'];
const runs = 5;
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

interface TreeMemory {
  /** Resident memory of the node process and of its descendants (PostgreSQL and its backends), summed. */
  nodeRss: number;
  databaseRss: number;
  /** PSS of the whole tree: PostgreSQL's shared buffers counted once rather than once per backend. */
  pss: number;
}

/** Memory in MiB of a process and all its descendants (node + postgres and its backends). */
function treeMemoryMiB(rootPid: number): TreeMemory {
  const children = new Map<number, number[]>();
  const rss = new Map<number, number>();
  const pss = new Map<number, number>();
  for (const entry of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const status = readFileSync(`/proc/${entry}/status`, 'utf8');
      const ppid = Number(/PPid:\s+(\d+)/.exec(status)?.[1]);
      const rollup = readFileSync(`/proc/${entry}/smaps_rollup`, 'utf8');
      rss.set(Number(entry), Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0));
      pss.set(Number(entry), Number(/Pss:\s+(\d+)/.exec(rollup)?.[1] ?? 0));
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      /* process ended meanwhile */
    }
  }
  const total = { nodeRss: (rss.get(rootPid) ?? 0) / 1024, databaseRss: 0, pss: (pss.get(rootPid) ?? 0) / 1024 };
  const stack = [...(children.get(rootPid) ?? [])];
  while (stack.length) {
    const pid = stack.pop()!;
    total.databaseRss += (rss.get(pid) ?? 0) / 1024;
    total.pss += (pss.get(pid) ?? 0) / 1024;
    stack.push(...(children.get(pid) ?? []));
  }
  return total;
}

/** Idle means after start-up has settled: timers and pools at rest, the start's garbage collected. */
const IDLE_AFTER_MS = Number(process.env.IDLE_AFTER_MS ?? 30_000);

async function startOnce(measureRss: boolean): Promise<{ ms: number; memory?: TreeMemory; early?: TreeMemory }> {
  const started = performance.now();
  const child = spawn(command[0]!, command.slice(1), { env, stdio: 'ignore' });
  while (!(await healthy())) {
    if (child.exitCode !== null) throw new Error(`${command.join(' ')} exited with ${child.exitCode}`);
    if (performance.now() - started > 60_000) throw new Error('not healthy after 60 s');
    await sleep(25);
  }
  const ms = performance.now() - started;
  let memory: TreeMemory | undefined;
  let early: TreeMemory | undefined;
  if (measureRss) {
    await sleep(5000);
    early = treeMemoryMiB(child.pid!);
    await sleep(Math.max(0, IDLE_AFTER_MS - 5000));
    memory = treeMemoryMiB(child.pid!);
  }
  child.kill('SIGTERM');
  await new Promise((resolve) => child.once('exit', resolve));
  return { ms, memory, early };
}

try {
  await startOnce(false); // first start: initdb + migrations, not measured
  const times: number[] = [];
  let memory: TreeMemory | undefined;
  let early: TreeMemory | undefined;
  for (let i = 0; i < runs; i++) {
    const r = await startOnce(i === runs - 1);
    times.push(r.ms);
    memory = r.memory ?? memory;
    early = r.early ?? early;
  }
  const mib = (n = 0) => n.toFixed(0);
  times.sort((a, b) => a - b);
  console.log(
    `${command.join(' ')}: start-to-healthy median ${(times[2]! / 1000).toFixed(2)} s ` +
      `(runs ${times.map((t) => (t / 1000).toFixed(2)).join(', ')}); idle memory: RSS node ${mib(memory?.nodeRss)} MiB + ` +
      `postgres ${mib(memory?.databaseRss)} MiB = ${mib((memory?.nodeRss ?? 0) + (memory?.databaseRss ?? 0))} MiB, PSS ${mib(memory?.pss)} MiB ` +
      `${IDLE_AFTER_MS / 1000} s after healthy (5 s after: node ${mib(early?.nodeRss)} + postgres ${mib(early?.databaseRss)} MiB)`,
  );
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
