/**
 * The shim's bound: while no platform process reads an instance's output, at most one second's
 * output budget waits; the rest is dropped and counted, and the count reaches the next reader.
 * Real processes, two drivers (the platform before and after a restart), one shim.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LINE_CUT_MARKER } from '../../src/platform/logs/bounded-lines.js';
import { LocalProcessDriver } from '../../src/platform/runtime/local/local-driver.js';
import { encodeFrame, FRAME, PLATFORM_SAYS } from '../../src/platform/runtime/local/shim-protocol.js';
import type { InstanceOutput, InstanceSpec } from '../../src/platform/runtime/port.js';
import { waitFor } from '../helpers/wait.js';

const BUDGET = { linesPerSecond: 1_000_000, bytesPerSecond: 128 * 1024 };
const FLOOD_LINES = 20_000; // 100 bytes each: ~2 MiB, far over the 128 KiB the shim may hold

/**
 * Says `ready`, floods once `flood` exists, then, once `again` exists, says `after <n> <secret>` every
 * 50 ms: the adopting platform's per-second budget may be spent by the held output it receives, and
 * then drops (and counts) the first of them.
 */
const APP = `
const fs = require('fs');
console.log('ready');
const line = 'x'.repeat(93);
const wait = (file, then) => { const t = setInterval(() => { if (fs.existsSync(file)) { clearInterval(t); then(); } }, 20); };
wait('flood', () => {
  for (let i = 0; i < ${FLOOD_LINES} - 1; i++) process.stdout.write('f' + String(i).padStart(5, '0') + ' ' + line + '\\n');
  // Flushed to the pipe (read by the shim) when the last write's callback runs.
  process.stdout.write('f' + String(${FLOOD_LINES} - 1).padStart(5, '0') + ' ' + line + '\\n', () => fs.writeFileSync('flooded', ''));
  let n = 0;
  wait('again', () => setInterval(() => console.log('after ' + n++ + ' ' + process.env.SECRET_TOKEN), 50));
});
setInterval(() => {}, 1000);
`;

const dir = mkdtempSync(join(tmpdir(), 'slipway-shim-'));
const drivers: LocalProcessDriver[] = [];

afterAll(async () => {
  for (const d of drivers) await d.shutdown();
  rmSync(dir, { recursive: true, force: true });
});

const spec: InstanceSpec = {
  id: 'shim-buffered',
  labels: { applicationId: 'a', environmentId: 'e', releaseId: 'r', deploymentId: 'd', processType: 'worker', ordinal: 1 },
  command: 'node app.js',
  artifactPath: dir,
  env: { SECRET_TOKEN: 'hunter2-very-secret' },
  listen: false,
  secrets: ['hunter2-very-secret'],
};

function driver(outputRate = BUDGET): { driver: LocalProcessDriver; lines: InstanceOutput[] } {
  const d = new LocalProcessDriver({ logDir: join(dir, 'logs'), stopGraceMs: 2000, outputRate });
  drivers.push(d);
  const lines: InstanceOutput[] = [];
  d.onOutput((o) => lines.push(o));
  return { driver: d, lines };
}

describe('an instance whose platform is away', () => {
  it('keeps running; its shim holds a bounded amount of output and counts what it dropped for the next platform process', async () => {
    writeFileSync(join(dir, 'app.js'), APP);
    const first = driver();
    const started = await first.driver.start(spec);
    await waitFor('ready', () => first.lines.some((l) => l.line === 'ready'));
    const record = {
      id: spec.id,
      pid: started.pid,
      startTicks: first.driver.startTicksOf(spec.id),
      port: null,
      restartCount: 0,
      lastExit: null,
    };
    expect(record.pid).toBeGreaterThan(0);
    expect(record.startTicks).toMatch(/^\d+$/);

    // The platform lets go (as a killed one would); the instance floods with nobody reading.
    await first.driver.detach();
    writeFileSync(join(dir, 'flood'), '');
    await waitFor('the flood written', () => existsSync(join(dir, 'flooded')), 30_000);

    // A record that does not match (another start time: a reused pid) is not adopted.
    const second = driver();
    expect(await second.driver.adopt(spec, { ...record, startTicks: '1' })).toBeNull();
    const adopted = await second.driver.adopt(spec, record);
    expect(adopted).toMatchObject({ id: spec.id, pid: record.pid, restartCount: 0 });

    writeFileSync(join(dir, 'again'), '');
    await waitFor('output after the adoption', () => second.lines.some((l) => l.line.startsWith('after ')), 30_000);
    // What arrived up to the first `after` line: the held flood, the drop counts, and `after <first>`
    // (the `after` lines before it were dropped by the budget and are in its counts).
    const upToAfter = second.lines.slice(0, second.lines.findIndex((l) => l.line.startsWith('after ')) + 1);
    const firstAfter = upToAfter.at(-1)!.line;
    const droppedAfters = Number(/^after (\d+) /.exec(firstAfter)![1]);
    const notices = upToAfter.map((l) => /^\[slipway: (\d+) lines \((\d+) bytes\) dropped/.exec(l.line)).filter(Boolean);
    // Every other line is a flood line, whole or (where a drop began) cut: never the tail of a
    // line whose start was dropped.
    const floodLines = upToAfter.slice(0, -1).filter((l) => !l.line.startsWith('[slipway: '));
    const whole = /^f\d{5} x{93}$/;
    const cut = floodLines.filter((l) => !whole.test(l.line));
    for (const l of cut) expect(l.line.endsWith(LINE_CUT_MARKER), l.line).toBe(true);
    const kept = floodLines.length;
    const dropped = notices.reduce((n, m) => n + Number(m![1]), 0) - droppedAfters;
    expect(kept).toBeGreaterThan(0);
    // At most the shim's bound, plus what still sat in the pipe (64 KiB) when the reader came back.
    expect(kept * 100).toBeLessThanOrEqual(BUDGET.bytesPerSecond + 64 * 1024);
    expect(dropped).toBeGreaterThan(0);
    // Every flood line is either delivered or counted, once: a line cut by a drop counts where it begins.
    expect(kept + dropped).toBe(FLOOD_LINES);
    // The secret is scrubbed by the adopting platform too.
    expect(firstAfter).toBe(`after ${droppedAfters} **secret**`);

    await second.driver.stop(spec.id);
    await waitFor('the instance stopped', () => {
      try {
        process.kill(record.pid!, 0);
        return false;
      } catch {
        return true;
      }
    });
  });

  it("never hands a new platform process the rest of a line whose start went to the one before (it may be a secret's end)", async () => {
    const half = spec.secrets[0]!.slice(0, 10);
    const app = partialLineApp(`say it: token=${half}`, `${spec.secrets[0]!.slice(10)} tail\nnext line\n`);
    const { started, first } = await startWithPartialLine('shim-partial-adopted', app);
    await first.driver.detach();
    writeFileSync(join(started.dir, 'rest'), '');
    const second = driver();
    expect(await second.driver.adopt(started.spec, started.record)).not.toBeNull();
    await waitFor('the next line', () => second.lines.some((l) => l.line === 'next line'), 30_000);
    // The line whose start the first process held (and never logged) is counted; its rest is not a line.
    expect(second.lines.map((l) => l.line)).toEqual([
      '[slipway: 1 lines (15 bytes) dropped: output waiting for the platform exceeded its buffer]',
      'next line',
    ]);
    await second.driver.stop(started.spec.id);
  });

  it('hands every line to the platform process that goes or the one that adopts the instance, none lost between them', async () => {
    // As fast as the pipe takes it, under a budget nothing reaches: every number must arrive, once.
    // The last one only once the file `adopted` exists (the going process may have read all the rest).
    const total = 200_000;
    const { appDir, instance } = appInstance(
      'shim-release',
      `const fs = require('fs');
let n = 0;
const last = () => (fs.existsSync('adopted') ? console.log('seq ' + n) : setTimeout(last, 20));
const go = () => { while (n < ${total - 1} && process.stdout.write('seq ' + n++ + '\\n')); n < ${total - 1} ? process.stdout.once('drain', go) : last(); };
go();
setInterval(() => {}, 1000);`,
    );
    const unbounded = { linesPerSecond: 100_000_000, bytesPerSecond: 64 * 1024 * 1024 };
    const first = driver(unbounded);
    const { pid } = await first.driver.start(instance);
    await waitFor('output', () => first.lines.length >= 1000, 30_000);
    const record = {
      id: instance.id,
      pid,
      startTicks: first.driver.startTicksOf(instance.id),
      port: null,
      restartCount: 0,
      lastExit: null,
    };
    await first.driver.detach();
    const second = driver(unbounded);
    expect(await second.driver.adopt(instance, record)).not.toBeNull();
    writeFileSync(join(appDir, 'adopted'), '');
    await waitFor('the last line', () => second.lines.at(-1)?.line === `seq ${total - 1}`, 30_000);
    await second.driver.stop(instance.id);
    expect(second.lines.length).toBeGreaterThan(0);
    // A line the going process held unfinished is lost (it cannot be logged twice), and counted.
    const lines = [...first.lines, ...second.lines].map((l) => l.line);
    const counted = lines.map((l) => /^\[slipway: (\d+) lines/.exec(l)).reduce((n, m) => n + Number(m?.[1] ?? 0), 0);
    const numbers = lines.filter((l) => !l.startsWith('[slipway: ')).map((l) => Number(/^seq (\d+)$/.exec(l)![1]));
    expect(counted).toBeLessThanOrEqual(1);
    expect(numbers.length + counted).toBe(total);
    expect(numbers.every((n, i) => i === 0 || n > numbers[i - 1]!)).toBe(true);
  });

  it('lets go of a connection released before it was accepted, and is never taken by it after', async () => {
    const { instance } = appInstance('shim-early-release', `let n = 0; setInterval(() => console.log('tick ' + n++), 20);`);
    const platform = driver();
    await platform.driver.start(instance);
    await waitFor('output', () => platform.lines.some((l) => l.line === 'tick 1'), 30_000);
    // A second connection says release, then accept (a platform process letting go of one it had not accepted yet).
    const other = connect(join(dir, 'shims', `${instance.id}.sock`));
    const closed = new Promise<void>((resolve) => other.once('close', () => resolve()));
    other.on('error', () => {});
    other.once('data', () => other.write(Buffer.from([PLATFORM_SAYS.release, PLATFORM_SAYS.accept])));
    other.resume();
    await closed;
    const seen = platform.lines.length;
    await waitFor('output after it', () => platform.lines.length > seen + 5, 30_000);
    // The accepted platform process still follows the instance.
    expect(platform.lines.map((l) => l.line).filter((l) => !l.startsWith('tick '))).toEqual([]);
    await platform.driver.stop(instance.id);
  });

  it('never leaves an instance it was starting as it lets go running with no pid on record (nobody could adopt it)', async () => {
    const { instance } = appInstance('shim-start-cut', `setInterval(() => console.log('tick'), 200);`);
    const platform = driver();
    const starting = platform.driver.start(instance);
    // Before its shim is reached (a shim takes ~100 ms to start and listen).
    await new Promise((r) => setTimeout(r, 10));
    await platform.driver.detach();
    const { pid } = await starting;
    const running = () => instanceProcesses(instance.id).filter((p) => !p.includes('instance-shim'));
    if (pid === null) await waitFor('the unrecorded instance ended', () => running().length === 0, 10_000);
    else expect(running().length).toBeGreaterThan(0);
    for (const p of instanceProcesses(instance.id)) process.kill(Number(p.split(' ')[0]), 'SIGKILL');
  });

  it('ends an unfinished line cut, without the start of a secret, when the shim is lost', async () => {
    const app = partialLineApp(`say it: token=${spec.secrets[0]!.slice(0, 10)}`, '');
    const { started, first } = await startWithPartialLine('shim-partial-lost', app);
    const shimPid = Number(readFileSync(`/proc/${started.record.pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]);
    process.kill(shimPid, 'SIGKILL');
    await waitFor('the loss noted', () => first.lines.some((l) => l.line === 'the instance supervisor ended unexpectedly'), 30_000);
    const lines = first.lines.map((l) => l.line).filter((l) => l !== 'ready' && l !== 'part follows');
    // Cut, the line loses its last (longest secret - 1) characters: where the secret began.
    expect(lines.slice(0, 2)).toEqual([`say it${LINE_CUT_MARKER}`, 'the instance supervisor ended unexpectedly']);
    await first.driver.stop(started.spec.id);
  });
});

describe('an instance under an older shim (a platform upgraded from one)', () => {
  it('protocol 2: is adopted; the rest of a line and what follows a drop are skipped to a newline, so no part of a secret is a line', async () => {
    // The older shim's side of the conversation: frames as protocol 4 has them, output cut as 2 did.
    const secret = spec.secrets[0]!;
    const lines = await adoptedThroughPeer(2, [
      [FRAME.stdout, `${secret.slice(5)} tail\nfirst whole line\nsay it: token=${secret.slice(0, 10)}`],
      [FRAME.dropped, JSON.stringify({ lines: 3, bytes: 300 })],
      [FRAME.stdout, `${secret.slice(10)} tail\nafter the drop\n`],
    ]);
    expect(lines).toEqual([
      'first whole line',
      '[slipway: 3 lines (300 bytes) dropped: output waiting for the platform exceeded its buffer]',
      'after the drop',
    ]);
  });

  it('protocol 3: is adopted and every line it hands on is kept (it cuts a flood at lines as 4 does)', async () => {
    const lines = await adoptedThroughPeer(3, [
      [FRAME.stdout, 'first whole line\n'],
      [FRAME.dropped, JSON.stringify({ lines: 3, bytes: 300 })],
      [FRAME.stdout, 'after the drop\n'],
    ]);
    expect(lines).toEqual([
      'first whole line',
      '[slipway: 3 lines (300 bytes) dropped: output waiting for the platform exceeded its buffer]',
      'after the drop',
    ]);
  });
});

/**
 * Adopts an instance through a peer that speaks as a shim of `protocol` and sends `frames` once
 * accepted; the lines the platform logged up to `after the drop`.
 */
async function adoptedThroughPeer(protocol: number, frames: ReadonlyArray<readonly [number, string]>): Promise<string[]> {
  // The instance itself: any process of ours (the record is checked by pid and start time).
  const id = `shim-protocol-${protocol}`;
  const instance = spawn('sleep', ['60'], { stdio: 'ignore', detached: true, env: { ...process.env, SLIPWAY_INSTANCE_ID: id } });
  const pid = instance.pid!;
  const startTicks = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[19]!;
  mkdirSync(join(dir, 'shims'), { recursive: true, mode: 0o700 });
  const peers: Socket[] = [];
  const peer = createServer((socket) => {
    peers.push(socket);
    socket.write(encodeFrame(FRAME.hello, Buffer.from(JSON.stringify({ protocol, id, pid, startTicks, shimPid: process.pid }))));
    socket.once('data', () => {
      for (const [type, text] of frames) socket.write(encodeFrame(type, Buffer.from(text)));
    });
  });
  await new Promise<void>((resolve) => peer.listen(join(dir, 'shims', `${id}.sock`), resolve));
  try {
    const platform = driver();
    const record = { id, pid, startTicks, port: null, restartCount: 0, lastExit: null };
    expect(await platform.driver.adopt({ ...spec, id }, record)).toMatchObject({ id, pid });
    await waitFor('the line after the drop', () => platform.lines.some((l) => l.line === 'after the drop'), 30_000);
    const lines = platform.lines.map((l) => l.line);
    // Stopped: the platform signals the instance, whose exit reaches it as a shim reports it.
    const stopped = platform.driver.stop(id);
    for (const socket of peers) socket.end(encodeFrame(FRAME.exit, Buffer.from(JSON.stringify({ code: null, signal: 'SIGTERM' }))));
    await stopped;
    return lines;
  } finally {
    peer.close();
    instance.kill('SIGKILL');
  }
}

/**
 * Says `ready`; once the file `part` exists, the line `part follows` and `part` (no newline) in one
 * write (one pipe read, one frame: the line arrives with the start of the next); `rest` once `rest`
 * exists.
 */
function partialLineApp(part: string, rest: string): string {
  return `
const fs = require('fs');
console.log('ready');
const wait = (file, then) => { const t = setInterval(() => { if (fs.existsSync(file)) { clearInterval(t); then(); } }, 20); };
wait('part', () => process.stdout.write('part follows\\n' + ${JSON.stringify(part)}, () => wait('rest', () => process.stdout.write(${JSON.stringify(rest)}))));
setInterval(() => {}, 1000);
`;
}

/** The spec of instance `id` running `app` (node app.js) in a directory of its own. */
function appInstance(id: string, app: string): { appDir: string; instance: InstanceSpec } {
  const appDir = mkdtempSync(join(dir, `${id}-`));
  writeFileSync(join(appDir, 'app.js'), app);
  return { appDir, instance: { ...spec, id, artifactPath: appDir } };
}

/** An instance that has printed the start of a line, read by a platform process (its scrubber holds it). */
async function startWithPartialLine(id: string, app: string) {
  const { appDir, instance } = appInstance(id, app);
  const first = driver();
  const { pid } = await first.driver.start(instance);
  await waitFor('ready', () => first.lines.some((l) => l.line === 'ready'));
  writeFileSync(join(appDir, 'part'), '');
  // The line before it came in the same frame: the platform process holds the start of the line.
  await waitFor('the start of the line read', () => first.lines.some((l) => l.line === 'part follows'), 30_000);
  const record = { id, pid, startTicks: first.driver.startTicksOf(id), port: null, restartCount: 0, lastExit: null };
  return { started: { dir: appDir, spec: instance, record }, first };
}

/** `<pid> <command line>` of the processes whose environment names the instance (its shim's included). */
function instanceProcesses(id: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (!readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0').includes(`SLIPWAY_INSTANCE_ID=${id}`)) continue;
      found.push(`${entry} ${readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ')}`);
    } catch {
      /* ended meanwhile */
    }
  }
  return found;
}
