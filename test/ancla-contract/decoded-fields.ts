import type { AnclaCall } from './calls/types.js';

/**
 * Checks that an answer holds every field a client decodes, with the type it decodes it into
 * (`members[].email:string`, `build.status:string`, `[].id:string`; see `AnclaCall.decodes`).
 * An array walked with `[]` must hold at least one element, so no check passes on empty data;
 * a field under a parent that is `null` is not looked at (the parent's own entry says it may be).
 * Returns the problems, empty when the answer decodes.
 */
export function decodeProblems(body: unknown, decodes: string[]): string[] {
  const problems: string[] = [];
  for (const spec of decodes) {
    const [path, types] = spec.split(':') as [string, string];
    let values: unknown[] = [body];
    for (const segment of path.split('.')) {
      const name = segment.replace(/\[\]$/, '');
      if (name) values = values.filter((v) => v !== null).map((v) => (v as Record<string, unknown>)[name]);
      if (segment.endsWith('[]')) {
        const arrays = values.filter((v) => v !== null);
        if (arrays.some((v) => !Array.isArray(v) || v.length === 0)) problems.push(`${spec}: ${path} is not a non-empty array`);
        values = arrays.flatMap((v) => (Array.isArray(v) ? v : []));
      }
    }
    for (const value of values)
      if (!types.split('|').some((t) => isOfType(value, t))) problems.push(`${spec}: got ${JSON.stringify(value)}`);
  }
  return problems;
}

function isOfType(value: unknown, type: string): boolean {
  switch (type) {
    case 'string':
      return typeof value === 'string';
    case 'integer':
      return Number.isInteger(value);
    case 'number':
      return typeof value === 'number';
    case 'boolean':
      return typeof value === 'boolean';
    case 'null':
      return value === null;
    case 'array':
      return Array.isArray(value);
    case 'object':
      return typeof value === 'object' && value !== null && !Array.isArray(value);
    default:
      throw new Error(`unknown decoded type '${type}'`);
  }
}

/** A call's path with its placeholders filled (`{ws}` → `vars.ws`). */
export function pathOf(call: Pick<AnclaCall, 'path'>, vars: Record<string, string>): string {
  return call.path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = vars[name];
    if (value === undefined) throw new Error(`${call.path}: no value for {${name}}`);
    return encodeURIComponent(value);
  });
}

/**
 * Sends a call as its client does (method, path, `X-API-Key`, a JSON body when it has one) to a
 * listening server and checks it succeeds and decodes; answers the parsed body.
 */
export async function sendCall(baseUrl: string, apiKey: string, call: AnclaCall, vars: Record<string, string>, body?: unknown) {
  const headers: Record<string, string> = { 'X-API-Key': apiKey };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const url = `${baseUrl}${pathOf(call, vars)}`;
  const response = await fetch(url, { method: call.method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  const parsed: unknown = text ? JSON.parse(text) : undefined;
  const label = `${call.client} ${call.method} ${call.path}`;
  if (response.status >= 300) throw new Error(`${label}: ${response.status} ${text}`);
  const problems = decodeProblems(parsed, call.decodes);
  if (problems.length) throw new Error(`${label} does not decode:\n  ${problems.join('\n  ')}\n${text}`);
  return { status: response.status, body: parsed as never };
}
