/**
 * PostgreSQL `text` (and `jsonb`) cannot hold NUL, and the driver turns lone UTF-16
 * surrogates into replacement characters only by luck of its encoder. Text a tenant's process
 * produced passes here before any insert, so one bad byte never fails a write (or a batch).
 */
// eslint-disable-next-line no-control-regex
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** U+FFFD stands for what could not be stored, as it does for invalid UTF-8 in decoded output. */
export const REPLACEMENT = '\ufffd';

/** The text with NUL and unpaired surrogates replaced by U+FFFD, and whether anything was. */
export function storableText(text: string): { text: string; replaced: boolean } {
  UNSTORABLE.lastIndex = 0;
  if (!UNSTORABLE.test(text)) return { text, replaced: false };
  return { text: text.replace(UNSTORABLE, REPLACEMENT), replaced: true };
}

/** {@link storableText}'s text alone. */
export function storable(text: string): string {
  return storableText(text).text;
}
