import type { Command } from 'commander';
import { WebSocket } from 'ws';
import { USER_AGENT, apiError, fetchOrExplain } from '../api.js';
import { Context } from '../context.js';
import { CliError, EXIT } from '../errors.js';
import { shellJoin } from './run.js';

/** The exec WebSocket's message types (the server's src/modules/instance-exec/exec-stream.ts). */
const FRAME = { stdin: 0, stdout: 1, stderr: 2, stdinEnd: 4 } as const;
/** Our input goes in messages of at most this many bytes (the server's limit is 64 KiB). */
const INPUT_CHUNK = 32 * 1024;

interface ExecOptions {
  instance?: string;
  tty?: boolean;
}

interface Opened {
  id: string;
  instance: string;
  stream_path: string;
}

export function execCommand(program: Command) {
  program
    .command('exec')
    .description(
      "Run a command inside a running instance (its files, processes, user and limits), or a shell when none is given; exits with the command's exit code",
    )
    .argument('[command...]', 'after `--`: the command and its arguments (none: an interactive shell)')
    .option('-i, --instance <id>', 'which instance: its id or name (`web.2`); default the first running one, web first')
    .option('--no-tty', 'no terminal even when yours is one')
    .addHelpText(
      'after',
      [
        '',
        'Examples:',
        '  slipway exec                          a shell in web.1',
        '  slipway exec -i worker.1 -- ps aux',
        '  slipway exec -- cat /tmp/app.pid',
      ].join('\n'),
    )
    .action(async (words: string[], o: ExecOptions, command: Command) => {
      const ctx = Context.of(command);
      const app = await ctx.app();
      const tty = o.tty !== false && process.stdin.isTTY === true && process.stdout.isTTY === true;
      const opened = await open(ctx, app.id, o.instance ?? null, {
        command: words.length ? shellJoin(words) : null,
        tty,
        ...(ctx.options.env ? { environment: ctx.options.env } : {}),
      });
      const status = await attach(ctx, opened, tty);
      if (ctx.out.json) ctx.out.stderr.write(`${JSON.stringify({ session: opened.id, instance: opened.instance, ...status })}\n`);
      process.exitCode = status.exit_code ?? EXIT.failure;
    });
}

async function open(ctx: Context, applicationId: string, instance: string | null, body: Record<string, unknown>): Promise<Opened> {
  const id = encodeURIComponent(applicationId);
  const path = instance ? `/v1/applications/${id}/instances/${encodeURIComponent(instance)}/exec` : `/v1/applications/${id}/exec`;
  const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': USER_AGENT };
  if (ctx.settings.apiKey) headers['x-api-key'] = ctx.settings.apiKey;
  const response = await fetchOrExplain(ctx.settings.server, `${ctx.settings.server}${path}`, {
    method: 'POST',
    headers,
    body: JSON.stringify(body),
  });
  const json = (await response.json().catch(() => ({}))) as unknown;
  if (response.status === 404 && /^Route /.test(String((json as { message?: string }).message)))
    throw new CliError('This server cannot run commands inside instances (an older version): use `slipway run` for a one-off run');
  if (!response.ok) throw apiError(response.status, json);
  return json as Opened;
}

/**
 * Runs the opened session over its WebSocket: our input in, its output out (paused while our
 * output is full). On a terminal ours goes raw, so keys like Ctrl-C reach the command, and its
 * size follows ours.
 */
function attach(ctx: Context, opened: Opened, tty: boolean): Promise<{ exit_code: number | null; signal: string | null }> {
  const stdin = process.stdin;
  const stdout = process.stdout;
  const url = new URL(`${ctx.settings.server.replace(/^http/, 'ws')}${opened.stream_path}`);
  if (tty) {
    url.searchParams.set('rows', String(stdout.rows || 24));
    url.searchParams.set('cols', String(stdout.columns || 80));
    if (process.env.TERM && /^[A-Za-z0-9._+-]{1,64}$/.test(process.env.TERM)) url.searchParams.set('term', process.env.TERM);
  }
  const headers: Record<string, string> = { 'user-agent': USER_AGENT };
  if (ctx.settings.apiKey) headers['x-api-key'] = ctx.settings.apiKey;
  const ws = new WebSocket(url.toString(), { headers, maxPayload: 4 * 1024 * 1024 });
  let restore = () => undefined as void;
  return new Promise((resolve, reject) => {
    let status: { exit_code: number | null; signal: string | null } | null = null;
    const onInput = (chunk: Buffer) => {
      for (let at = 0; at < chunk.length; at += INPUT_CHUNK)
        ws.send(Buffer.concat([Buffer.from([FRAME.stdin]), chunk.subarray(at, at + INPUT_CHUNK)]));
      // Our input waits while the server has not taken what we sent.
      if (ws.bufferedAmount > 1024 * 1024) {
        stdin.pause();
        const wait = setInterval(() => {
          if (ws.bufferedAmount < 256 * 1024 || ws.readyState !== WebSocket.OPEN) {
            clearInterval(wait);
            stdin.resume();
          }
        }, 20);
      }
    };
    const onResize = () => ws.send(JSON.stringify({ type: 'resize', rows: stdout.rows, cols: stdout.columns }));
    const stop = () => {
      stdin.off('data', onInput);
      stdin.pause();
      stdout.off('resize', onResize);
      restore();
    };
    ws.on('unexpected-response', (_request, response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => (text = (text + String(chunk)).slice(0, 64 * 1024)));
      response.on('end', () => {
        stop();
        let body: unknown = {};
        try {
          body = JSON.parse(text);
        } catch {
          /* not JSON: the status says it */
        }
        reject(apiError(response.statusCode ?? 500, body));
      });
    });
    ws.once('open', () => {
      if (tty) {
        stdin.setRawMode(true);
        restore = () => {
          if (stdin.isTTY) stdin.setRawMode(false);
        };
        stdout.on('resize', onResize);
      }
      stdin.on('data', onInput);
      stdin.once('end', () => ws.readyState === WebSocket.OPEN && ws.send(Buffer.from([FRAME.stdinEnd])));
      stdin.resume();
    });
    ws.on('message', (data, isBinary) => {
      const bytes = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
      if (!isBinary) {
        const message = JSON.parse(bytes.toString('utf8')) as { type?: string; exit_code?: number | null; signal?: string | null };
        if (message.type === 'exit') status = { exit_code: message.exit_code ?? null, signal: message.signal ?? null };
        return;
      }
      const sink = bytes[0] === FRAME.stdout ? ctx.out.stdout : bytes[0] === FRAME.stderr ? ctx.out.stderr : null;
      if (sink && !sink.write(bytes.subarray(1))) {
        ws.pause();
        sink.once('drain', () => ws.resume());
      }
    });
    ws.once('error', (err) => {
      stop();
      reject(new CliError(`The exec connection failed (${err.message})`));
    });
    ws.once('close', () => {
      stop();
      if (status) resolve(status);
      else reject(new CliError(`The connection to the server ended before the command did, so it was stopped (session ${opened.id})`));
    });
  });
}
