/** Field names whose values are secret or may hold one: the audit log keeps the name, never the value. */
const SECRET_FIELD = /pass|secret|token|key|value|variables|raw|env|certificate|private|credential|authorization|signature|cookie/i;

export const REDACTED = '[redacted]';

/**
 * A copy of a request body fit for the audit log: values of secret-looking fields replaced
 * (booleans and numbers stay: `secret: true` says nothing secret), URLs without their userinfo,
 * arrays and objects walked.
 */
export function redactForAudit(value: unknown, depth = 0): unknown {
  return redact(value, depth, false);
}

/** Bytes bodies longer than this are kept as text (cut to 2000 characters like every string), not parsed. */
const MAX_PARSED_BODY_CHARS = 256 * 1024;

/**
 * A request body as the audit log keeps it: bytes (a route that reads its body raw, like the
 * GitHub hook whose signature covers the exact bytes) become what they encode, the parsed
 * JSON when they are JSON, else their UTF-8 text, never a `{type: 'Buffer', data: [...]}` object.
 */
export function auditableBody(body: unknown): unknown {
  if (!(body instanceof Uint8Array)) return body;
  const text = Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
  // A large body is kept as its beginning only (as any long text field is), not parsed whole.
  if (text.length > MAX_PARSED_BODY_CHARS) return text;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/**
 * A configuration write's body: only names and flags stay. Its text fields (`value`, `raw`
 * dotenv text, the values of `variables`) may hold a secret whatever they are called.
 */
export function redactConfigurationBody(value: unknown): unknown {
  return redact(value, 0, true);
}

function redact(value: unknown, depth: number, strings: boolean): unknown {
  if (depth > 8) return REDACTED;
  if (Array.isArray(value)) return value.slice(0, 100).map((v) => redact(v, depth + 1, strings));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const secretLooking = SECRET_FIELD.test(k) && typeof v !== 'boolean' && typeof v !== 'number' && v !== null;
      const keepName = strings && k === 'name' && typeof v === 'string';
      out[k] = keepName ? v : secretLooking ? REDACTED : redact(v, depth + 1, strings);
    }
    return out;
  }
  if (typeof value === 'string') return strings ? REDACTED : withoutUserinfo(value).slice(0, 2000);
  return value;
}

function withoutUserinfo(text: string): string {
  if (!/^[a-z][a-z0-9+.-]*:\/\/[^/]*@/i.test(text)) return text;
  try {
    const url = new URL(text);
    if (!url.username && !url.password) return text;
    url.username = '';
    url.password = '';
    return url.toString();
  } catch {
    return REDACTED;
  }
}
