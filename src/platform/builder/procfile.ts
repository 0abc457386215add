import type { ProcessDefinitions } from '../db/schema.js';
import { BuildError } from './port.js';

/** Process type names must be usable in `process_counts` (see applications.schemas PROCESS_TYPE_PATTERN). */
const PROCESS_TYPE = /^[a-z][a-z0-9_-]{0,62}$/;
export const MAX_PROCFILE_BYTES = 64 * 1024;

/**
 * Parses a Procfile: one `type: command` per line; blank lines and `#` comments are skipped.
 * Anything else fails the build with the line number, so a typo never deploys half an app.
 */
export function parseProcfile(text: string): ProcessDefinitions {
  if (Buffer.byteLength(text, 'utf8') > MAX_PROCFILE_BYTES) throw new BuildError(`Procfile is larger than ${MAX_PROCFILE_BYTES} bytes`);
  const processes: ProcessDefinitions = {};
  const lines = text.split(/\r?\n/);
  lines.forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const where = `Procfile line ${index + 1}`;
    const match = /^([^:\s]+)\s*:\s*(.*)$/.exec(line);
    if (!match) throw new BuildError(`${where}: expected "<process type>: <command>", got "${truncate(line)}"`);
    const [, name, command] = match as unknown as [string, string, string];
    if (!PROCESS_TYPE.test(name)) {
      throw new BuildError(
        `${where}: process type "${truncate(name)}" must start with a lowercase letter and contain only a-z, 0-9, _ and -`,
      );
    }
    if (command.trim() === '') throw new BuildError(`${where}: process type "${name}" has no command`);
    if (processes[name]) throw new BuildError(`${where}: process type "${name}" is defined twice`);
    processes[name] = { cmd: command.trim(), env: {} };
  });
  if (Object.keys(processes).length === 0) throw new BuildError('Procfile defines no processes');
  return processes;
}

function truncate(s: string) {
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}
