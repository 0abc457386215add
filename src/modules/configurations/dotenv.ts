/**
 * Parses dotenv text: comments, blank lines, `export `, single quotes (literal),
 * double quotes (with \n, \t, \", \\ escapes, may span lines), unquoted values
 * (trailing ` # comment` dropped). Malformed lines are reported, the rest still apply.
 */
export interface DotenvResult {
  entries: Array<{ name: string; value: string }>;
  errors: Array<{ name: string; message: string }>;
}

const ESCAPES: Record<string, string> = { n: '\n', r: '\r', t: '\t', '"': '"', '\\': '\\', $: '$' };

export function parseDotenv(text: string): DotenvResult {
  const entries: DotenvResult['entries'] = [];
  const errors: DotenvResult['errors'] = [];
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === '' || line.startsWith('#')) continue;
    const match = /^(?:export\s+)?([^=\s]+)\s*=\s*(.*)$/.exec(line);
    if (!match) {
      // Name the entry only by a first word that reads as a variable name followed by more
      // (`NAME: value`): the rest may be a secret value, and a line that is one bare token is
      // most likely a value itself (a line of a multi-line key), so it is named by its number.
      const named = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]{0,63})[\s:]/.exec(line);
      errors.push({ name: named ? named[1]! : `line ${i + 1}`, message: `line ${i + 1}: expected NAME=value` });
      continue;
    }
    const name = match[1]!;
    let rest = match[2]!;
    if (rest.startsWith("'")) {
      const end = rest.indexOf("'", 1);
      if (end < 0) {
        errors.push({ name, message: `line ${i + 1}: unterminated single quote` });
        continue;
      }
      entries.push({ name, value: rest.slice(1, end) });
    } else if (rest.startsWith('"')) {
      let value = '';
      let closed = false;
      let j = 1;
      // A double-quoted value may continue over the following lines until its closing quote.
      for (;;) {
        for (; j < rest.length; j++) {
          const ch = rest[j]!;
          if (ch === '\\' && j + 1 < rest.length) {
            const next = rest[++j]!;
            value += ESCAPES[next] ?? `\\${next}`;
            continue;
          }
          if (ch === '"') {
            closed = true;
            break;
          }
          value += ch;
        }
        if (closed || i + 1 >= lines.length) break;
        value += '\n';
        rest = lines[++i]!;
        j = 0;
      }
      if (!closed) {
        errors.push({ name, message: 'unterminated double quote' });
        continue;
      }
      entries.push({ name, value });
    } else {
      entries.push({ name, value: rest.replace(/\s+#.*$/, '').trim() });
    }
  }
  return { entries, errors };
}
