import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, mkdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freshDatabase } from '../helpers/harness.js';

const ROOT = join(import.meta.dirname, '../..');
// Inside the repository so the compiled code resolves node_modules as dist/ does.
mkdirSync(join(ROOT, '.test-data'), { recursive: true });
const outDir = mkdtempSync(join(ROOT, '.test-data', 'build-'));
const dataDir = mkdtempSync(join(ROOT, '.test-data', 'build-data-'));
let server: ChildProcess | undefined;
let dropDatabase: (() => Promise<void>) | undefined;

afterAll(async () => {
  if (server && server.exitCode === null) {
    server.kill('SIGTERM');
    await new Promise((done) => server!.once('exit', done));
  }
  await dropDatabase?.();
  rmSync(outDir, { recursive: true, force: true });
  rmSync(dataDir, { recursive: true, force: true });
});

describe('the built server (npm run build)', () => {
  it('starts from JavaScript alone, migrates its database and answers healthy', { timeout: 240_000 }, async () => {
    execFileSync(process.execPath, ['scripts/build.mjs', outDir], { cwd: ROOT, stdio: 'pipe' });
    // One bundle per program (scripts/build-server.mjs), the migrations beside them.
    for (const program of ['main.js', 'admin.js', 'cli.js', 'instance-shim.js']) expect(existsSync(join(outDir, program))).toBe(true);
    expect(existsSync(join(outDir, 'migrations/0001_control_plane.sql'))).toBe(true);

    const database = await freshDatabase();
    dropDatabase = database.drop;
    server = spawn(process.execPath, [join(outDir, 'main.js')], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/tmp',
        DATABASE_URL: database.url,
        DATA_DIR: dataDir,
        HOST: '127.0.0.1',
        PORT: '0',
        ROUTER_HOST: '127.0.0.1',
        ROUTER_PORT: '0',
        SLIPWAY_ROLE: 'api',
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const apiUrl = await new Promise<string>((ok, fail) => {
      const onData = (chunk: Buffer) => {
        output += chunk;
        const listening = /\[slipway\] API listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
        if (listening) ok(listening[1]!);
      };
      server!.stdout!.on('data', onData);
      server!.stderr!.on('data', onData);
      server!.once('exit', (code) => fail(new Error(`compiled server exited with ${code}:\n${output}`)));
    });

    const response = await fetch(`${apiUrl}/v1/integrations/health`);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ status: 'ok', database: 'ok' });
    // A quiet start: no embedded-database output, one line saying where the API listens.
    expect(output).not.toContain('[database]');

    // Swagger UI is bundled and finds its pages in node_modules (build-server.mjs's package directories).
    const page = await fetch(`${apiUrl}/docs/static/swagger-initializer.js`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('data:image/svg+xml;base64,');
    expect((await fetch(`${apiUrl}/docs/static/swagger-ui-bundle.js`)).status).toBe(200);
    // A path the API does not have: 404, or 405 naming the methods it takes (that router is built on first use).
    expect((await fetch(`${apiUrl}/docs/index.html`)).status).toBe(404);
    const wrongMethod = await fetch(`${apiUrl}/v1/integrations/health`, { method: 'DELETE' });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get('allow')).toContain('GET');
  });
});
