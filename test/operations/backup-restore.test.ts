/**
 * Issue 37, the operator's own backup: `backup <file>` of a running control plane (embedded
 * PostgreSQL, keys, built artifacts) restores with `restore <file>` onto an empty data directory;
 * the platform started on it serves the application again (its release runs again from the
 * restored records and artifacts) with its configuration intact: a secret value still decrypts.
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TestRepo } from '../helpers/git-repo.js';
import { killLeftovers, runCli, runMain } from '../helpers/main-process.js';
import { pythonHttpApp } from '../helpers/python-app.js';
import { routerGet } from '../helpers/router-get.js';
import { waitFor } from '../helpers/wait.js';

const ADMIN = { email: 'operator@example.com', password: 'operator-password-1' };
const SECRET_VALUE = 'kept-across-the-restore-7f3a';
const cleanups: Array<() => unknown> = [];

afterAll(async () => {
  killLeftovers();
  for (const cleanup of cleanups.reverse()) await cleanup();
});

const port = () => 40000 + Math.floor(Math.random() * 10000);

function tempDir(prefix: string) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function api(base: string, cookie: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { cookie, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

async function signIn(base: string) {
  const res = await fetch(`${base}/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(ADMIN),
  });
  expect(res.status).toBe(200);
  return res.headers.get('set-cookie')!.split(';')[0]!;
}

describe('slipway-admin backup and restore', () => {
  it('a backup of a running data directory restores onto an empty one: the app serves again and its secret still decrypts', async () => {
    const dataA = tempDir('slipway-backup-a-');
    const dataB = join(tempDir('slipway-backup-b-'), 'data');
    const archive = join(tempDir('slipway-backup-file-'), 'control-plane.tar');
    const repo = new TestRepo();
    cleanups.push(() => repo.remove());
    repo.commit({ 'server.py': pythonHttpApp("os.environ['GREETING_SECRET']"), Procfile: 'web: python3 server.py\n' });
    const envA = { DATA_DIR: dataA, EMBEDDED_PG_PORT: String(port()) };
    const routerA = port();

    const a = runMain({
      ...envA,
      ROUTER_PORT: String(routerA),
      ADMIN_EMAIL: ADMIN.email,
      ADMIN_PASSWORD: ADMIN.password,
      SOURCE_PATH_ALLOWLIST: tmpdir(),
    });
    cleanups.push(() => a.stop());
    const baseA = await a.ready;
    if (!baseA) throw new Error(`server A did not start:\n${a.output()}`);
    const cookie = await signIn(baseA);
    const org = await api(baseA, cookie, 'POST', '/v1/organizations', { name: 'Backed Up' });
    const project = await api(baseA, cookie, 'POST', '/v1/projects', { name: 'Shop', organization_id: org.body.id });
    const app = await api(baseA, cookie, 'POST', '/v1/applications', { name: 'Web', project_id: project.body.id });
    expect(app.status, JSON.stringify(app.body)).toBe(201);
    const appId = app.body.id as string;
    const settings = { github_repository: repo.dir, health_check_path: '/', deployment_timeout: 60 };
    expect((await api(baseA, cookie, 'PATCH', `/v1/applications/${appId}/settings`, settings)).status).toBe(200);
    const secret = { name: 'GREETING_SECRET', value: SECRET_VALUE, secret: true, buildtime: false };
    expect((await api(baseA, cookie, 'POST', `/v1/configurations/${appId}`, secret)).status).toBe(201);
    expect((await api(baseA, cookie, 'POST', `/v1/applications/${appId}/deploy`)).status).toBe(202);
    const deployment = await waitFor(
      'the deployment on A',
      async () => {
        const list = await api(baseA, cookie, 'GET', `/v1/applications/${appId}/deployments`);
        const d = list.body.items?.[0];
        if (!d) return null;
        const detail = (await api(baseA, cookie, 'GET', `/v1/deployments/${d.id}/detail`)).body;
        return detail.complete || detail.error ? detail : null;
      },
      180_000,
      500,
    );
    expect(deployment.complete, JSON.stringify(deployment)).toBe(true);
    const host = new URL(deployment.deploy_metadata.url).hostname;
    expect(await routerGet(routerA, host)).toEqual({ status: 200, body: SECRET_VALUE });

    // The backup, while A serves.
    const made = await runCli(['backup', archive], envA);
    expect(made.code, made.stderr).toBe(0);
    expect(statSync(archive).mode & 0o777).toBe(0o600);
    const keyText = readFileSync(join(dataA, 'secret.key'), 'utf8').trim();
    for (const printed of [made.stdout, made.stderr]) {
      expect(printed).not.toContain(keyText);
      expect(printed).not.toContain(readFileSync(join(dataA, 'postgres.password'), 'utf8').trim());
    }
    await a.stop();

    // Onto a fresh data directory (A is gone: nothing of it is needed any more).
    rmSync(dataA, { recursive: true, force: true });
    const envB = { DATA_DIR: dataB, EMBEDDED_PG_PORT: String(port()) };
    const restored = await runCli(['restore', archive], envB);
    expect(restored.code, restored.stderr).toBe(0);
    // Never over a data directory that holds something, unless forced.
    const again = await runCli(['restore', archive], envB);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/is not empty: restore onto a fresh data directory, or pass --force/);

    const routerB = port();
    const b = runMain({ ...envB, ROUTER_PORT: String(routerB), SOURCE_PATH_ALLOWLIST: tmpdir() });
    cleanups.push(() => b.stop());
    const baseB = await b.ready;
    if (!baseB) throw new Error(`server B did not start:\n${b.output()}`);
    // The release runs again from the restored records and artifacts, with the secret decrypted by the restored key.
    const served = await waitFor(
      'the application served by B',
      async () => {
        const r = await routerGet(routerB, host).catch(() => null);
        return r?.status === 200 ? r : null;
      },
      120_000,
      500,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\nserver B:\n${b.output().slice(-6000)}`);
    });
    expect(served.body).toBe(SECRET_VALUE);
    // The same accounts, and every sealed value opens with the restored key: rotation opens each
    // one (and stops, exit 1, at the first no key opens); all are already under the current key.
    const cookieB = await signIn(baseB);
    expect((await api(baseB, cookieB, 'GET', `/v1/applications/${appId}/deployments`)).body.items).toHaveLength(1);
    const resealed = await runCli(['secrets', 'rotate'], envB);
    expect(resealed.code, resealed.stderr).toBe(0);
    expect(resealed.stdout).toContain('config_vars.value_sealed: re-sealed 0 of 1');
    await b.stop();
  }, 600_000);
});
