/**
 * The README's "A first deploy in five minutes", run as written: its shell blocks are read from
 * README.md (so the test breaks when the README drifts) and run in one bash on a terminal (a pty
 * through util-linux `script`, `login` prompts for the password there) against the real server
 * (`src/main.ts` as an operator starts it, with the README's ADMIN_EMAIL and ADMIN_PASSWORD).
 * Only what cannot run here verbatim is changed, each said below: the `npm` lines (the checkout is
 * installed and the server already started), and the fixed ports 8080/8081 (other tests use them).
 */
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findHaproxy } from '../../src/find-binary.js';
import { freshDatabase } from '../helpers/harness.js';
import { killLeftovers, runMain } from '../helpers/main-process.js';
import { waitFor } from '../helpers/wait.js';

const ROOT = resolve(import.meta.dirname, '../..');
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

/** The ```sh blocks of one README section, in order. */
function shellBlocks(section: string): string[] {
  const start = README.indexOf(`\n## ${section}\n`);
  if (start < 0) throw new Error(`README.md has no section "${section}"`);
  const end = README.indexOf('\n## ', start + 1);
  const text = README.slice(start, end < 0 ? undefined : end);
  return [...text.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => done(port));
    });
  });
}

const blocks = shellBlocks('A first deploy in five minutes');
const startLine = blocks.flatMap((b) => b.split('\n')).find((l) => /\bnpm start\b/.test(l)) ?? '';
const adminEmail = /ADMIN_EMAIL=(\S+)/.exec(startLine)?.[1];
const adminPassword = /ADMIN_PASSWORD='([^']+)'/.exec(startLine)?.[1];

let server: ReturnType<typeof runMain>;
let apiUrl: string;
let routerPort: number;
let home: string;
let dropDatabase: () => Promise<void>;

beforeAll(async () => {
  if (!adminEmail || !adminPassword) throw new Error(`the README's start line names no ADMIN_EMAIL and ADMIN_PASSWORD: ${startLine}`);
  home = mkdtempSync(join(tmpdir(), 'slipway-readme-'));
  const database = await freshDatabase();
  dropDatabase = database.drop;
  routerPort = await freePort();
  server = runMain({
    DATABASE_URL: database.url,
    DATA_DIR: join(home, 'data'),
    ROUTER_PORT: String(routerPort),
    // The edge the README's reader gets: EDGE_DRIVER unset (HAProxy where it is installed).
    EDGE_DRIVER: '',
    // The walk-through's ~/hello is below this test's HOME, in the temporary directory.
    SOURCE_PATH_ALLOWLIST: tmpdir(),
    ADMIN_EMAIL: adminEmail,
    ADMIN_PASSWORD: adminPassword,
  });
  const url = await server.ready;
  if (!url) throw new Error(`the server did not start:\n${server.output()}`);
  apiUrl = url;
}, 120_000);

afterAll(async () => {
  await server?.stop();
  killLeftovers();
  await dropDatabase?.();
  if (home) rmSync(home, { recursive: true, force: true });
});

describe('README: a first deploy in five minutes', () => {
  it.skipIf(!existsSync('/usr/bin/script'))(
    'runs as written and reaches the served page',
    async () => {
      // The reader's applications are served by the default edge: HAProxy where it is installed (as CI installs it).
      expect(server.output()).toContain(findHaproxy() ? 'edge: haproxy (default:' : 'edge: builtin (default:');
      // `npm link` puts `slipway` on the PATH: here a bin directory with the checkout's bin/slipway.js.
      const bin = join(home, 'bin');
      mkdirSync(bin);
      writeFileSync(join(bin, 'slipway'), `#!/bin/sh\nexec "${process.execPath}" "${join(ROOT, 'bin/slipway.js')}" "$@"\n`);
      chmodSync(join(bin, 'slipway'), 0o755);
      const script = blocks
        .join('\n')
        .split('\n')
        .filter((line) => !/^\s*(npm |\S+=\S+ .*npm start)/.test(line))
        .join('\n')
        .replaceAll('http://localhost:8080', apiUrl)
        .replaceAll(':8081', `:${routerPort}`);
      expect(script).toContain('slipway login');
      expect(script).toContain('curl ');
      writeFileSync(join(home, 'walkthrough.sh'), `set -euo pipefail\n${script}\necho WALKTHROUGH-DONE\n`);

      const child = spawn('script', ['-qfec', `bash ${join(home, 'walkthrough.sh')}`, '/dev/null'], {
        cwd: ROOT,
        env: {
          PATH: `${bin}:${process.env.PATH ?? ''}`,
          HOME: home,
          TERM: 'dumb',
          SLIPWAY_CLI_SOURCE: '1',
          GIT_AUTHOR_NAME: 'Newcomer',
          GIT_AUTHOR_EMAIL: 'newcomer@example.com',
          GIT_COMMITTER_NAME: 'Newcomer',
          GIT_COMMITTER_EMAIL: 'newcomer@example.com',
        },
      });
      let screen = '';
      child.stdout.on('data', (c) => {
        screen += c;
      });
      const exited = new Promise<number>((done) => child.on('close', (code) => done(code ?? 1)));
      await waitFor('the password prompt', async () => screen.includes('Password'), 60_000);
      child.stdin.write(`${adminPassword}\r`);
      const code = await exited;
      expect(code, screen).toBe(0);
      expect(screen).toContain('WALKTHROUGH-DONE');
      expect(screen).toMatch(/Hello from Acme/);
      expect(screen).not.toContain(adminPassword);
    },
    240_000,
  );
});
