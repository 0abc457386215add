/**
 * Why a deployment's new instances failed, as data (the deployment's `failure`) and as one
 * human sentence (its `error_detail`): what ended the process or what the health check got,
 * on which port, what it listens on instead, its last lines of output and a hint for the
 * usual causes. Runtime-neutral: the local runtime fills it from what it watched.
 */

/** Lines of an instance's own output kept for a failure (the last ones before it). */
export const FAILURE_OUTPUT_LINES = 20;
/** Longest output line kept in a failure (a failure record stays small). */
const MAX_LINE_CHARS = 500;

/** What one health-check request got. */
export interface ProbeResult {
  ok: boolean;
  /** The HTTP status, when something answered. */
  status: number | null;
  /** In words: `HTTP 404`, `connection refused`, `no answer within 2s`, `connection closed without an answer`. */
  result: string;
}

export type FailureReason = 'crashed_during_start' | 'crashed_in_stability_window' | 'health_check_timeout';

export interface DeployDiagnosis {
  reason: FailureReason;
  /** `web.1` */
  instance: string;
  process_type: string;
  /** How the process ended (crashes only). */
  exit: { code: number | null; signal: string | null; description: string } | null;
  /** The port the platform gave it in `PORT` (web processes). */
  port: number | null;
  /** What the health check last got (web processes). */
  health_check: { path: string; port: number; result: string; status: number | null } | null;
  /** Ports its processes listen on, read from /proc in its network namespace; null when they could not be read. */
  listening_ports: number[] | null;
  /** What was checked to find `listening_ports`, or why it could not be. */
  listening_checked: string;
  /** Seconds after the instance first answered healthy (stability-window crashes). */
  seconds_after_healthy: number | null;
  /** Its last lines of output (scrubbed of secrets). */
  output: string[];
  hint: string | null;
}

/** Keeps the last FAILURE_OUTPUT_LINES lines of output per instance (bounded per line). */
export class OutputTail {
  private readonly tails = new Map<string, string[]>();

  add(instanceId: string, line: string) {
    let tail = this.tails.get(instanceId);
    if (!tail) this.tails.set(instanceId, (tail = []));
    tail.push(line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)}…` : line);
    if (tail.length > FAILURE_OUTPUT_LINES) tail.shift();
  }

  of(instanceId: string): string[] {
    return [...(this.tails.get(instanceId) ?? [])];
  }

  forget(instanceId: string) {
    this.tails.delete(instanceId);
  }
}

/** `exit code 1` / `signal SIGKILL` / `OOM: …` as code and signal. */
export function exitOf(description: string | null): DeployDiagnosis['exit'] {
  if (!description) return null;
  const code = /^exit code (\d+)$/.exec(description);
  const signal = /^signal (SIG[A-Z0-9]+)$/.exec(description);
  return { code: code ? Number(code[1]) : null, signal: signal ? signal[1]! : null, description };
}

/** The likeliest cause, from the exit, the output and the health check; null when nothing fits. */
export function hintFor(d: Omit<DeployDiagnosis, 'hint'>): string | null {
  const text = d.output.join('\n');
  const missingModule =
    /Cannot find module '([^']+)'/.exec(text) ??
    /Cannot find package '([^']+)'/.exec(text) ??
    /ModuleNotFoundError: No module named '([^']+)'/.exec(text) ??
    /cannot load such file -- (\S+)/.exec(text);
  if (missingModule)
    return `a dependency is missing (${missingModule[1]}): add it to the application's dependencies (package.json "dependencies", not "devDependencies"; requirements.txt; Gemfile) and deploy again`;
  if (/Missing script: "?start"?/.test(text) || /npm (ERR!|error) missing script: start/i.test(text))
    return 'there is no start command: add a "start" script to package.json or a `web:` line to the Procfile';
  if (d.exit?.code === 127 || /: not found$|command not found/m.test(text))
    return "the start command was not found: check the Procfile's command (or package.json's start script) and that the build installed it";
  if (d.exit?.code === 126)
    return 'the start command is not executable: check its permissions (chmod +x) or run it through its interpreter';
  if (/EADDRINUSE|address already in use/i.test(text))
    return `the port it tried to listen on is taken: listen on the port in the PORT variable${d.port ? ` (${d.port})` : ''}, nothing else`;
  if (d.exit?.description.startsWith('OOM'))
    return 'it ran out of memory: use a larger pod class (`slipway scale web=1 --pod-class web=m1.large`) or use less memory';
  if (d.reason === 'health_check_timeout' && d.health_check) {
    const others = (d.listening_ports ?? []).filter((p) => p !== d.port);
    if (others.length > 0 && !(d.listening_ports ?? []).includes(d.port ?? -1))
      return `it listens on port ${others.join(', ')}, not on ${d.port} (the PORT variable): make it listen on process.env.PORT / $PORT`;
    if (d.health_check.status !== null)
      return `it answers ${d.health_check.path} with HTTP ${d.health_check.status}: make that path answer 2xx, or set the application's health_check_path to one that does`;
    if (d.listening_ports && d.listening_ports.length === 0)
      return `nothing listens yet: the app must listen on the port in the PORT variable (${d.port}); if it only starts slowly, raise the application's health_check_timeout`;
    if (/no answer within/.test(d.health_check.result))
      return `it accepted the connection but did not answer in time: check that ${d.health_check.path} answers quickly`;
    return `make it listen on the port in the PORT variable (${d.port}) and answer 2xx on ${d.health_check.path}, or raise the application's health_check_timeout if it starts slowly`;
  }
  if (d.reason === 'crashed_in_stability_window')
    return 'it crashed soon after starting to answer: its last lines above say why (a background task, a failed connection to a database, an unhandled error)';
  return null;
}

/** The deployment's `error_detail`: one sentence, the hint last. */
export function describeDiagnosis(d: DeployDiagnosis, options: { seconds?: number; previousServes?: boolean } = {}): string {
  const seconds = options.seconds;
  let what: string;
  if (d.reason === 'health_check_timeout') {
    const hc = d.health_check;
    what = hc
      ? `${d.instance} did not answer 2xx on ${hc.path} at port ${hc.port} within ${seconds ?? '?'}s (last: ${hc.result})`
      : `${d.instance} did not keep running`;
    if (d.listening_ports && d.listening_ports.length > 0 && !d.listening_ports.includes(d.port ?? -1))
      what += `; it listens on port ${d.listening_ports.join(', ')} instead`;
  } else {
    const how = d.exit ? d.exit.description : 'an unknown exit';
    what =
      d.reason === 'crashed_in_stability_window'
        ? `${d.instance} exited (${how}) ${d.seconds_after_healthy ?? '?'}s after it answered healthy, inside the stability window${options.previousServes ? '; the previous release keeps serving' : ''}`
        : `${d.instance} exited (${how}) during start, before it ${d.health_check ? 'answered its health check' : 'settled'}`;
  }
  const telling = tellingLine(d.output);
  return `${what}${telling && d.reason !== 'health_check_timeout' ? `; its output: ${telling}` : ''}${d.hint ? `. Hint: ${d.hint}` : ''}`;
}

/** The line of the output that most likely says why: the last one naming an error, else the last non-empty one. */
function tellingLine(output: string[]): string | undefined {
  const lines = output.map((l) => l.trim()).filter((l) => l.length > 0 && !/^at /.test(l));
  const naming = lines.filter((l) => /\b(error|exception|fatal|panic|cannot|not found|missing|denied)\b/i.test(l));
  return naming.at(-1) ?? lines.at(-1);
}

/** The diagnosis as lines for a deployment log (and the CLI): the facts, then the instance's last output. */
export function diagnosisLines(d: DeployDiagnosis): string[] {
  const lines: string[] = [];
  if (d.exit) lines.push(`${d.instance} exit: ${d.exit.description}`);
  if (d.health_check) lines.push(`health check: GET ${d.health_check.path} on port ${d.health_check.port}: ${d.health_check.result}`);
  if (d.port !== null && d.reason === 'health_check_timeout')
    lines.push(
      `listening: ${d.listening_ports === null ? 'unknown' : d.listening_ports.length > 0 ? `port ${d.listening_ports.join(', ')}` : 'no port'} (PORT=${d.port}; ${d.listening_checked})`,
    );
  if (d.output.length > 0) {
    lines.push(`last ${d.output.length} line(s) of ${d.instance}:`);
    for (const l of d.output) lines.push(`  | ${l}`);
  }
  if (d.hint) lines.push(`hint: ${d.hint}`);
  return lines;
}
