import { pino } from 'pino';

/** Headers that carry credentials never reach the log. */
export const REDACT = ['req.headers["x-api-key"]', 'req.headers.cookie', 'req.headers.authorization', 'res.headers["set-cookie"]'];

/**
 * The process's one logger, built before anything else (the job store, the runtime and the
 * HTTP app all log through it), so a process without the HTTP app logs the same way.
 */
export function createProcessLogger(level: string) {
  return pino({ level, redact: REDACT });
}
