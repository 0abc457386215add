import { appendFileSync } from 'node:fs';
import process from 'node:process';

/** A module resolution hook: appends each resolved URL to TRACE_MODULES_FILE, one a line after the process's pid. */
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  if (process.env.TRACE_MODULES_FILE) appendFileSync(process.env.TRACE_MODULES_FILE, `${process.pid} ${resolved.url}\n`);
  return resolved;
}
