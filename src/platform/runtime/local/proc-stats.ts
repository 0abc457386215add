import { execFileSync } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';

/** Kernel clock ticks per second, the unit of /proc CPU times. */
const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

interface ProcStat {
  pid: number;
  pgrp: number;
  /** utime + stime, in ticks. */
  cpuTicks: number;
  /** Start time after boot, in ticks. */
  startTicks: number;
}

function parseStat(pid: number, text: string): ProcStat | null {
  // The command name (field 2) may contain spaces and parentheses: fields start after the last ')'.
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  if (rest.length < 22) return null;
  return { pid, pgrp: Number(rest[2]), cpuTicks: Number(rest[11]) + Number(rest[12]), startTicks: Number(rest[19]) };
}

async function rssBytes(pid: number): Promise<number> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

async function uptimeSeconds(): Promise<number> {
  return Number((await readFile('/proc/uptime', 'utf8')).split(' ')[0]);
}

export interface GroupReading {
  cpuSeconds: number;
  memoryBytes: number;
  /** Seconds since the group leader started, for the first CPU average. */
  ageSeconds: number;
}

/**
 * CPU time and resident memory of whole process groups (an instance is `sh -c cmd` plus
 * whatever it forks), read from /proc in one scan.
 */
export async function readProcessGroups(leaders: number[]): Promise<Map<number, GroupReading>> {
  const result = new Map<number, GroupReading>();
  if (leaders.length === 0) return result;
  const wanted = new Set(leaders);
  const uptime = await uptimeSeconds();
  const entries = await readdir('/proc').catch(() => [] as string[]);
  await Promise.all(
    entries
      .filter((e) => /^\d+$/.test(e))
      .map(async (entry) => {
        const pid = Number(entry);
        let stat: ProcStat | null;
        try {
          stat = parseStat(pid, await readFile(`/proc/${pid}/stat`, 'utf8'));
        } catch {
          return; // exited while we looked
        }
        if (!stat || !wanted.has(stat.pgrp)) return;
        const rss = await rssBytes(pid);
        const acc = result.get(stat.pgrp) ?? { cpuSeconds: 0, memoryBytes: 0, ageSeconds: 0 };
        acc.cpuSeconds += stat.cpuTicks / CLOCK_TICKS;
        acc.memoryBytes += rss;
        if (pid === stat.pgrp) acc.ageSeconds = Math.max(0.001, uptime - stat.startTicks / CLOCK_TICKS);
        result.set(stat.pgrp, acc);
      }),
  );
  return result;
}

/** The environment of a process, or null when it is gone or unreadable. */
export async function processEnvironment(pid: number): Promise<string[] | null> {
  try {
    return (await readFile(`/proc/${pid}/environ`, 'utf8')).split('\0');
  } catch {
    return null;
  }
}

/** Processes whose environment carries `variable=<one of values>` (an instance's shim and its process), by pid. */
export async function processesCarrying(variable: string, values: Set<string>): Promise<number[]> {
  if (values.size === 0) return [];
  const pids: number[] = [];
  for (const entry of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(entry)) continue;
    const env = await processEnvironment(Number(entry));
    const value = env?.find((kv) => kv.startsWith(`${variable}=`))?.slice(variable.length + 1);
    if (value !== undefined && values.has(value)) pids.push(Number(entry));
  }
  return pids;
}
