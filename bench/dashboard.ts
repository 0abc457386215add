/**
 * The dashboard's first load in headless Chromium against `npm start` (node dist/main.js): bytes
 * transferred (on the wire, compressed as served) and time to interactive on a cold cache, for the
 * login page and for the signed-in organizations page. Median of 5 cold loads each (a new browser
 * context every time). Needs `npm run build` and Debian's chromium.
 *   npx tsx bench/dashboard.ts [--runs 5]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { chromium, type Browser, type Page } from 'playwright-core';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '5' } } });
const RUNS = Number(values.runs);
const port = 20000 + Math.floor(Math.random() * 20000);
const base = `http://127.0.0.1:${port}`;
const dataDir = mkdtempSync(join(tmpdir(), 'slipway-dashboard-bench-'));
const admin = { email: 'bench@example.com', password: 'bench-password-123' };

const server = spawn('node', ['dist/main.js'], {
  env: {
    ...process.env,
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
    ROUTER_PORT: String(port + 1),
    EMBEDDED_PG_PORT: String(port + 2),
    ADMIN_EMAIL: admin.email,
    ADMIN_PASSWORD: admin.password,
    LOG_LEVEL: 'warn',
  },
  stdio: 'ignore',
});

interface Load {
  bytes: number;
  scriptBytes: number;
  requests: number;
  interactiveMs: number;
}

/** One cold load: a fresh context (empty cache), bytes counted from the DevTools protocol. */
async function coldLoad(browser: Browser, ready: (page: Page) => Promise<unknown>, cookie?: string): Promise<Load> {
  const context = await browser.newContext();
  if (cookie) await context.addCookies([{ name: 'slipway_session', value: cookie, url: base }]);
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
  const types = new Map<string, string>();
  let bytes = 0;
  let scriptBytes = 0;
  let requests = 0;
  cdp.on('Network.responseReceived', (e) => types.set(e.requestId, e.type));
  cdp.on('Network.loadingFinished', (e) => {
    requests++;
    bytes += e.encodedDataLength;
    if (types.get(e.requestId) === 'Script') scriptBytes += e.encodedDataLength;
  });
  const started = performance.now();
  await page.goto(base, { waitUntil: 'commit' });
  await ready(page);
  const interactiveMs = performance.now() - started;
  await page.waitForLoadState('networkidle');
  await context.close();
  return { bytes, scriptBytes, requests, interactiveMs };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function report(name: string, loads: Load[]) {
  console.log(
    `${name}: ${median(loads.map((l) => l.bytes))} bytes in ${median(loads.map((l) => l.requests))} requests ` +
      `(JavaScript ${median(loads.map((l) => l.scriptBytes))} bytes), interactive in ${median(loads.map((l) => l.interactiveMs)).toFixed(0)} ms ` +
      `(median of ${loads.length}; min ${Math.min(...loads.map((l) => l.interactiveMs)).toFixed(0)}, max ${Math.max(...loads.map((l) => l.interactiveMs)).toFixed(0)})`,
  );
}

let browser: Browser | undefined;
try {
  for (let i = 0; ; i++) {
    if (
      await fetch(`${base}/v1/integrations/health`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    if (i > 600) throw new Error('Slipway did not become healthy in 60 s');
    await sleep(100);
  }
  const login = await fetch(`${base}/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(admin),
  });
  const cookie = /slipway_session=([^;]+)/.exec(login.headers.get('set-cookie') ?? '')?.[1];
  if (!cookie) throw new Error(`login failed: ${login.status} ${login.headers.get('set-cookie')}`);

  browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
  const loginPage: Load[] = [];
  const signedIn: Load[] = [];
  for (let run = 0; run < RUNS; run++) {
    // Interactive: the login form is on screen and takes input (its e-mail field is focused).
    loginPage.push(await coldLoad(browser, (page) => page.locator('input[name=email]:focus').waitFor()));
    // Signed in: the organizations page has its data and its search box.
    signedIn.push(await coldLoad(browser, (page) => page.getByRole('searchbox').waitFor(), cookie));
  }
  report('login page, cold', loginPage);
  report('organizations page signed in, cold', signedIn);
} finally {
  await browser?.close();
  server.kill('SIGTERM');
  await new Promise((done) => server.once('exit', done));
  rmSync(dataDir, { recursive: true, force: true });
}
