import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { expect } from 'vitest';
import type { Harness, TestUser } from '../helpers/harness.js';

/** A git repository in a temp dir, committed to with `commit(files)`. */
export class TestRepo {
  readonly dir: string;
  constructor(prefix = 'slipway-repo-') {
    this.dir = mkdtempSync(join(tmpdir(), prefix));
    this.git('init', '-q', '-b', 'main');
    this.git('config', 'user.email', 'test@example.com');
    this.git('config', 'user.name', 'Test');
  }

  git(...args: string[]): string {
    return execFileSync('git', args, { cwd: this.dir, encoding: 'utf8' }).trim();
  }

  /** Writes (or with null, deletes) files and commits them; returns the commit sha. */
  commit(files: Record<string, string | null>, message = 'change'): string {
    for (const [path, content] of Object.entries(files)) {
      const full = join(this.dir, path);
      if (content === null) rmSync(full, { force: true });
      else {
        mkdirSync(dirname(full), { recursive: true });
        writeFileSync(full, content);
      }
    }
    this.git('add', '-A');
    this.git('commit', '-q', '--allow-empty', '-m', message);
    return this.git('rev-parse', 'HEAD');
  }

  remove() {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A tiny Node HTTP app with a build script that reads build-time variables. */
export function nodeApp(greeting = 'hello'): Record<string, string> {
  return {
    'package.json': JSON.stringify({ name: 'tiny', version: '1.0.0', private: true, scripts: { build: 'node build.js', start: 'node server.js' } }, null, 2),
    'package-lock.json': JSON.stringify({ name: 'tiny', version: '1.0.0', lockfileVersion: 3, requires: true, packages: { '': { name: 'tiny', version: '1.0.0' } } }, null, 2),
    'build.js': [
      "const fs = require('fs');",
      "console.log('greeting at build time: ' + process.env.BUILD_GREETING);",
      "console.log('token at build time: ' + process.env.API_TOKEN);",
      "console.log('database url at build time: ' + process.env.DATABASE_URL);",
      "if (process.env.PEM_KEY) console.log('pem at build time: ' + process.env.PEM_KEY);",
      "fs.writeFileSync('build-output.txt', String(process.env.BUILD_GREETING));",
    ].join('\n'),
    'server.js': `require('http').createServer((q, s) => s.end(${JSON.stringify(greeting)})).listen(process.env.PORT);\n`,
    Procfile: 'web: node server.js\nworker: node -e "setInterval(() => {}, 1000)"\n',
  };
}

export async function until<T>(probe: () => Promise<T | undefined | null | false>, ms = 30_000, every = 100): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, every));
  }
}

export interface TestApp {
  user: TestUser;
  orgId: string;
  orgSlug: string;
  projectId: string;
  appId: string;
}

let seq = 0;
/** An organization, project and application owned by a fresh user, pointed at `repository`. */
export async function createApp(h: Harness, settings: Record<string, unknown> = {}): Promise<TestApp> {
  seq++;
  const user = await h.user();
  const org = await h.app.inject({ method: 'POST', url: '/v1/organizations', headers: user.headers, payload: { name: `Org ${seq} ${user.username}` } });
  expect(org.statusCode).toBe(201);
  const project = await h.app.inject({ method: 'POST', url: '/v1/projects', headers: user.headers, payload: { name: 'Shop', organization_id: org.json().id } });
  expect(project.statusCode).toBe(201);
  const app = await h.app.inject({ method: 'POST', url: '/v1/applications', headers: user.headers, payload: { name: 'Web', project_id: project.json().id } });
  expect(app.statusCode).toBe(201);
  if (Object.keys(settings).length > 0) {
    const patched = await h.app.inject({ method: 'PATCH', url: `/v1/applications/${app.json().id}/settings`, headers: user.headers, payload: settings });
    expect(patched.statusCode).toBe(200);
  }
  return { user, orgId: org.json().id, orgSlug: org.json().slug, projectId: project.json().id, appId: app.json().id };
}

export async function setConfig(h: Harness, t: TestApp, name: string, value: string, flags: { secret?: boolean; buildtime?: boolean } = {}) {
  const res = await h.app.inject({ method: 'POST', url: `/v1/configurations/${t.appId}`, headers: t.user.headers, payload: { name, value, secret: flags.secret ?? false, buildtime: flags.buildtime ?? false } });
  expect(res.statusCode).toBe(201);
}

/** Starts a build and waits until it settles; returns the image log and detail. */
export async function buildAndWait(h: Harness, t: TestApp, body?: Record<string, unknown>) {
  const started = await h.app.inject({ method: 'POST', url: `/v1/images/${t.appId}/build`, headers: t.user.headers, ...(body ? { payload: body } : {}) });
  expect(started.statusCode).toBe(202);
  const { image_id, version } = started.json();
  const log = await until(async () => {
    const r = await h.app.inject({ method: 'GET', url: `/v1/images/${image_id}/log`, headers: t.user.headers });
    const body = r.json();
    return body.status === 'building' ? null : body;
  }, 120_000, 100);
  const detail = (await h.app.inject({ method: 'GET', url: `/v1/images/${image_id}/detail`, headers: t.user.headers })).json();
  return { image_id: image_id as string, version: version as number, log, detail };
}
