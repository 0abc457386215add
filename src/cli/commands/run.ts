import http from 'node:http';
import https from 'node:https';
import { StringDecoder } from 'node:string_decoder';
import type { Command } from 'commander';
import { ok, USER_AGENT, apiError } from '../api.js';
import { Context } from '../context.js';
import { CliError, EXIT } from '../errors.js';
import { terminalSafe } from '../output.js';
import { serverEvents, streamPath } from '../sse.js';
import { positiveInt } from './auth.js';

/** The frames of an attached run's response (the server's src/modules/deployments/run-stream.ts). */
const FRAME = { stdout: 1, stderr: 2, end: 3 } as const;
/** A frame longer than this means a broken stream, not something to buffer. */
const MAX_FRAME_BYTES = 4 * 1024 * 1024;

interface RunOptions {
  process?: string;
  timeout?: number;
  detach?: boolean;
  tty?: boolean;
  raw?: boolean;
}

interface RunEnd {
  id?: string;
  status: string;
  exit_code: number | null;
  error_detail?: string | null;
}

export function runCommand(program: Command) {
  program
    .command('run')
    .description("Run a one-off command with the application's release and configuration; passes your input and exits with its exit code")
    .argument('<command...>', 'after `--`: the command and its arguments')
    .option('-p, --process <type>', 'process type whose settings it runs with')
    .option('--timeout <seconds>', 'stop it after this long (default 1 hour; 10 minutes with --detach)', (v) => positiveInt(v, '--timeout'))
    .option('--no-tty', 'no terminal even when yours is one (by default an interactive terminal gets one)')
    .option('--raw', "pass the command's output bytes unchanged (binary or exact dumps); a terminal session always is")
    .option('-d, --detach', 'queue it as a job that outlives this command (no input); its log is followed')
    .addHelpText(
      'after',
      [
        '',
        'Examples:',
        '  slipway run bash                        an interactive shell (on a terminal)',
        '  echo hi | slipway run cat               standard input is passed on',
        '  slipway run -- psql < dump.sql',
        '  slipway run --raw -- pg_dump > dump.sql',
        "  slipway run -- sh -c 'echo $DATABASE_URL | wc -c'",
      ].join('\n'),
    )
    .action(async (words: string[], o: RunOptions, command: Command) => {
      const ctx = Context.of(command);
      if (o.detach) return runQueued(ctx, words, o);
      const end = await runAttached(ctx, words, o);
      if (end === 'unsupported') {
        ctx.out.stderr.write('slipway: this server cannot attach to a run (an older version): running it queued, without your input\n');
        return runQueued(ctx, words, o);
      }
      reportEnd(ctx, end);
    });
}

/** The command's end: its exit code becomes ours; a timeout or an end without one is said on stderr. */
function reportEnd(ctx: Context, end: RunEnd) {
  if (ctx.out.json) ctx.out.stderr.write(`${JSON.stringify(end)}\n`);
  if (end.status === 'timed_out') ctx.out.stderr.write(`slipway: the command timed out (--timeout sets another limit)\n`);
  else if (end.exit_code === null && end.status !== 'succeeded')
    ctx.out.stderr.write(`slipway: the command ${end.status}${end.error_detail ? `: ${terminalSafe(end.error_detail)}` : ''}\n`);
  process.exitCode = end.exit_code ?? (end.status === 'succeeded' ? 0 : EXIT.failure);
}

/**
 * `POST /runs/attach`: our standard input is the request body (sent as it is read), the
 * response is the command's output in frames. On a terminal (stdin and stdout both), the
 * command gets one of the same size and ours goes raw, so keys like Ctrl-C reach it.
 */
async function runAttached(ctx: Context, words: string[], o: RunOptions): Promise<RunEnd | 'unsupported'> {
  const app = await ctx.app();
  const stdin = process.stdin;
  const stdout = process.stdout;
  const tty = o.tty !== false && stdin.isTTY === true && stdout.isTTY === true;
  const query = new URLSearchParams({ command: shellJoin(words) });
  if (o.process) query.set('process_type', o.process);
  if (ctx.options.env) query.set('environment', ctx.options.env);
  if (o.timeout) query.set('timeout_seconds', String(o.timeout));
  if (tty) {
    query.set('tty', 'true');
    query.set('rows', String(stdout.rows || 24));
    query.set('cols', String(stdout.columns || 80));
    if (process.env.TERM && /^[A-Za-z0-9._+-]{1,64}$/.test(process.env.TERM)) query.set('term', process.env.TERM);
  }
  const url = new URL(`${ctx.settings.server}/v1/applications/${encodeURIComponent(app.id)}/runs/attach?${query}`);
  const headers: Record<string, string> = {
    'content-type': 'application/octet-stream',
    'transfer-encoding': 'chunked',
    accept: 'application/vnd.slipway.run-stream',
    'user-agent': USER_AGENT,
  };
  if (ctx.settings.apiKey) headers['x-api-key'] = ctx.settings.apiKey;

  const request = (url.protocol === 'https:' ? https : http).request(url, { method: 'POST', headers });
  request.flushHeaders();
  let restoreTerminal = () => undefined as void;
  const stopInput = () => {
    stdin.unpipe(request);
    stdin.pause();
    restoreTerminal();
  };
  try {
    const response = await new Promise<http.IncomingMessage>((resolve, reject) => {
      request.once('response', resolve);
      request.once('error', (err: NodeJS.ErrnoException) =>
        reject(
          new CliError(
            `Cannot reach the Slipway server at ${ctx.settings.server} (${err.code ?? err.message}); set --server or SLIPWAY_SERVER`,
          ),
        ),
      );
    });
    if (response.statusCode !== 200) {
      const body = await readJson(response);
      if (response.statusCode === 404 && /^Route /.test(String((body as { message?: string }).message))) return 'unsupported';
      throw apiError(response.statusCode ?? 500, body);
    }
    const runId = String(response.headers['x-slipway-run-id'] ?? '');
    if (tty) {
      stdin.setRawMode(true);
      restoreTerminal = () => {
        if (stdin.isTTY) stdin.setRawMode(false);
      };
    }
    // Our input goes on only once the server took the run; a command that exits early stops it.
    stdin.pipe(request);
    stdin.once('error', () => request.end());
    request.on('error', () => undefined);
    return await readFrames(ctx, response, { raw: tty || o.raw === true, runId });
  } finally {
    stopInput();
    request.destroy();
  }
}

/** Reads the frames of an attached run, writing its output as it comes (paused while our stdout is full). */
function readFrames(ctx: Context, response: http.IncomingMessage, o: { raw: boolean; runId: string }): Promise<RunEnd> {
  const sinks = {
    [FRAME.stdout]: { stream: ctx.out.stdout, decoder: new StringDecoder('utf8') },
    [FRAME.stderr]: { stream: ctx.out.stderr, decoder: new StringDecoder('utf8') },
  };
  return new Promise((resolve, reject) => {
    let pending: Buffer = Buffer.alloc(0);
    let end: RunEnd | null = null;
    response.on('data', (chunk: Buffer) => {
      pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
      while (pending.length >= 5) {
        const type = pending.readUInt8(0);
        const length = pending.readUInt32BE(1);
        if (length > MAX_FRAME_BYTES) return response.destroy(new Error(`a frame of ${length} bytes`));
        if (pending.length < 5 + length) break;
        const payload = pending.subarray(5, 5 + length);
        pending = pending.subarray(5 + length);
        if (type === FRAME.end) {
          end = JSON.parse(payload.toString('utf8')) as RunEnd;
          continue;
        }
        const sink = sinks[type as 1 | 2];
        if (!sink) continue;
        const written = o.raw ? sink.stream.write(payload) : sink.stream.write(terminalSafe(sink.decoder.write(payload)));
        if (!written) {
          response.pause();
          sink.stream.once('drain', () => response.resume());
        }
      }
    });
    response.once('end', () => {
      if (end) return resolve(end);
      reject(lostConnection(o.runId));
    });
    response.once('error', () => reject(lostConnection(o.runId)));
    response.once('aborted', () => reject(lostConnection(o.runId)));
  });
}

function lostConnection(runId: string) {
  return new CliError(
    `The connection to the server ended before the command did, so it was stopped${runId ? ` (run ${runId})` : ''}. ` +
      'For a command that must outlive the connection: slipway run --detach -- <command>',
  );
}

async function readJson(response: http.IncomingMessage): Promise<unknown> {
  let text = '';
  for await (const chunk of response) {
    if (text.length < 64 * 1024) text += String(chunk);
  }
  try {
    return JSON.parse(text);
  } catch {
    return {};
  }
}

/** The queued run (`POST /runs`): no input; its log followed until it ends. */
async function runQueued(ctx: Context, words: string[], o: RunOptions) {
  const app = await ctx.app();
  const started = await ok(
    ctx.api.POST('/v1/applications/{application_id}/runs', {
      params: { path: { application_id: app.id } },
      body: {
        command: shellJoin(words),
        ...(o.process ? { process_type: o.process } : {}),
        ...(ctx.options.env ? { environment: ctx.options.env } : {}),
        ...(o.timeout ? { timeout_seconds: o.timeout } : {}),
      },
    }),
  );
  let end: RunEnd = { status: 'failed', exit_code: null };
  for await (const event of serverEvents(ctx.settings, streamPath('/v1/runs/{run_id}/log/stream', { run_id: started.id }))) {
    if (event.event === 'line') ctx.out.stdout.write(`${terminalSafe((JSON.parse(event.data) as { line: string }).line)}\n`);
    else if (event.event === 'end') end = JSON.parse(event.data) as RunEnd;
  }
  reportEnd(ctx, { id: started.id, ...end });
}

/** Words back into one shell command line, each quoted when it needs to be. */
export function shellJoin(words: string[]): string {
  if (words.length === 1) return words[0]!;
  return words.map((w) => (/^[A-Za-z0-9_\-./=:,@%+]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`)).join(' ');
}
