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
      // Name the entry by its first word only: the rest of a malformed line may be a secret value.
      errors.push({ name: line.split(/[\s:=]/)[0]!.slice(0, 64), message: `line ${i + 1}: expected NAME=value` });
      continue;
    }
    const name = match[1]!;
    let rest = match[2]!;
    if (rest.startsWith("'")) {
      const end = rest.indexOf("'", 1);
      if (end < 0) { errors.push({ name, message: `line ${i + 1}: unterminated single quote` }); continue; }
      entries.push({ name, value: rest.slice(1, end) });
    } else if (rest.startsWith('"')) {
      let value = '';
      let closed = false;
      let j = 1;
      // A double-quoted value may continue over the following lines until its closing quote.
      for (;;) {
        for (; j < rest.length; j++) {
          const ch = rest[j]!;
          if (ch === '\\' && j + 1 < rest.length) { const next = rest[++j]!; value += ESCAPES[next] ?? `\\${next}`; continue; }
          if (ch === '"') { closed = true; break; }
          value += ch;
        }
        if (closed || i + 1 >= lines.length) break;
        value += '\n';
        rest = lines[++i]!;
        j = 0;
      }
      if (!closed) { errors.push({ name, message: 'unterminated double quote' }); continue; }
      entries.push({ name, value });
    } else {
      entries.push({ name, value: rest.replace(/\s+#.*$/, '').trim() });
    }
  }
  return { entries, errors };
}
