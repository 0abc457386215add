import { describe, expect, it } from 'vitest';
import { run } from '../../src/platform/git/command.js';
import { ByteTail, LINE_CUT_MARKER, LineSplitter, LineTail, OutputTooLarge } from '../../src/platform/logs/index.js';
import { OutputRateGate } from '../../src/platform/runtime/local/output-rate.js';
import { lineStarts } from '../../src/platform/runtime/local/line-starts.js';
import { LineScrubber, scrubber } from '../../src/platform/runtime/scrub.js';
import { waitFor } from '../helpers/wait.js';

// The bounded readers every subprocess's output passes through (issue 27, class 5); the
// end-to-end proof through the API is test/isolation/exhaustion.test.ts.
describe('bounded line readers', () => {
  it('cuts a long line once with a marker, skips its rest, and keeps a multi-byte character split between chunks whole', () => {
    const lines: string[] = [];
    const splitter = new LineSplitter((l) => lines.push(l), 8);
    splitter.write('short\nabcdefghijkl');
    splitter.write('mnop\r\nnext\n');
    const euro = Buffer.from('€\n');
    splitter.write(euro.subarray(0, 1));
    splitter.write(euro.subarray(1));
    splitter.write('unterminated');
    splitter.end();
    expect(lines).toEqual(['short', `abcdefgh${LINE_CUT_MARKER}`, 'next', '€', `untermin${LINE_CUT_MARKER}`]);
  });

  it('keeps only the last lines of a tail, and the whole lines of a byte tail', () => {
    const tail = new LineTail(20);
    for (let i = 0; i < 100; i++) tail.push(`line ${i}`);
    expect(tail.text()).toBe('[slipway: earlier output dropped]\nline 98\nline 99\n');
    const bytes = new ByteTail(16);
    bytes.write(Buffer.from('first line\nsecond\nthird\n'));
    const fromBytes = new LineTail();
    bytes.linesInto(fromBytes);
    expect(fromBytes.text()).toBe('[slipway: earlier output dropped]\nsecond\nthird\n');
  });

  it('drops the end of a cut line where a secret may begin, and skips a line whose middle was dropped', () => {
    const secret = 'SECRET-VALUE-123';
    const scrub = scrubber([secret]);
    expect(scrub(`${'x'.repeat(20)}SECRET-VA${LINE_CUT_MARKER}`)).toBe(`${'x'.repeat(14)}${LINE_CUT_MARKER}`);
    expect(scrub(`a ${secret} b`)).toBe('a **secret** b');
    const lines: string[] = [];
    let open = false;
    const scrubbing = new LineScrubber(
      [secret],
      (l) => lines.push(l),
      16 * 1024,
      () => open,
    );
    scrubbing.write(`${'x'.repeat(20_000)}SECRET-`);
    open = true;
    scrubbing.discardPartial();
    scrubbing.write('VALUE-123 tail\nafter\n');
    scrubbing.end();
    expect(lines).toEqual(['after']);
  });

  it('says whether a drop forgot a line start, and skips nothing more when the dropped output ended the line', () => {
    const lines: string[] = [];
    const scrubbing = new LineScrubber([], (l) => lines.push(l));
    scrubbing.write('held start');
    expect(scrubbing.discardPartial(true)).toBe(true);
    expect(scrubbing.discardPartial(true)).toBe(false);
    scrubbing.write('next\n');
    expect(lines).toEqual(['next']);
    // Counted where lines begin: a chunk that continues a line holds no start for it.
    expect(lineStarts(Buffer.from('a\nb\nc'), false)).toBe(3);
    expect(lineStarts(Buffer.from('tail\nb\n'), true)).toBe(1);
    expect(lineStarts(Buffer.from(''), false)).toBe(0);
    // A start held only by the decoder (a character's first byte) is a start forgotten too, and nothing of it stays.
    scrubbing.write(Buffer.from('one\n\xc3', 'latin1'));
    expect(scrubbing.discardPartial(true)).toBe(true);
    scrubbing.write('three\n');
    expect(lines).toEqual(['next', 'one', 'three']);
  });

  it('drops a character cut in two before the cut marker before it trims the end where a secret may begin', () => {
    const scrub = scrubber(['SECRET-VALUE-123']);
    expect(scrub(`${'x'.repeat(20)}SECRET-VA\uFFFD${LINE_CUT_MARKER}`)).toBe(`${'x'.repeat(14)}${LINE_CUT_MARKER}`);
  });

  it('counts a refused piece of an overlong line whose first piece was admitted as no line of its own', () => {
    const notices: string[] = [];
    const gate = new OutputRateGate({ linesPerSecond: 1, bytesPerSecond: 1000 }, (n) => notices.push(n));
    expect(gate.admit('first piece')).toBe(true);
    expect(gate.admit('second piece', true)).toBe(false);
    expect(gate.admit('another line')).toBe(false);
    gate.close();
    expect(notices).toEqual(['[slipway: 1 lines (26 bytes) dropped: output over 1 lines or 1000 bytes per second]']);
  });

  it('counts what a closed rate gate drops and says so once per second', () => {
    let now = 0;
    const notices: string[] = [];
    const gate = new OutputRateGate(
      { linesPerSecond: 2, bytesPerSecond: 1000 },
      (n) => notices.push(n),
      () => now,
    );
    expect([gate.admit('a'), gate.admit('b'), gate.admit('c'), gate.admit('d')]).toEqual([true, true, false, false]);
    expect(gate.closed()).toBe(true);
    now = 1000;
    expect(gate.admit('e')).toBe(true);
    gate.close();
    expect(notices).toEqual(['[slipway: 2 lines (4 bytes) dropped: output over 2 lines or 1000 bytes per second]']);
  });

  it("says a drop at the end of its second even when the timer fires before the gate's clock reaches it", async () => {
    // Timers count from the event loop's clock, the gate from Date.now: about one in eight fire a
    // millisecond early by it. Then, with no output after, the notice used to wait for the next line.
    const started = Date.now();
    let now = 0;
    const notices: string[] = [];
    const gate = new OutputRateGate(
      { linesPerSecond: 1, bytesPerSecond: 1000 },
      (n) => notices.push(n),
      () => now,
    );
    expect([gate.admit('a'), gate.admit('b')]).toEqual([true, false]);
    now = 999; // where the gate's clock stands when its timer (due in 1000 ms) fires
    await waitFor('the first look at the window', () => Date.now() - started > 1100, 5000, 20);
    expect(notices).toEqual([]);
    now = 1000;
    await waitFor('the notice', () => notices.length > 0, 5000, 20);
    expect(notices).toEqual(['[slipway: 1 lines (2 bytes) dropped: output over 1 lines or 1000 bytes per second]']);
    gate.close();
  });

  it('refuses to read a whole standard output past its limit, and keeps only the tail of a flood', async () => {
    await expect(run('sh', ['-c', 'head -c 100000 /dev/zero'], { maxStdoutBytes: 50_000 })).rejects.toBeInstanceOf(OutputTooLarge);
    let seen = 0;
    const flood = await run('sh', ['-c', 'seq 1 200000; echo last >&2'], { onLine: () => ++seen < 10 });
    expect(seen).toBe(10);
    expect(flood.stdout.length).toBeLessThanOrEqual(70 * 1024);
    expect(flood.stdout.trimEnd().split('\n').pop()).toBe('200000');
    expect(flood.stderr).toBe('last\n');
  });
});
