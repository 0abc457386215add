import { expect } from 'vitest';
import type { Harness, TestUser } from '../helpers/harness.js';
import { seedApplication } from '../helpers/seed.js';
import { waitFor } from '../helpers/wait.js';

/** A tiny Node HTTP app with a build script that reads build-time variables. */
export function nodeApp(greeting = 'hello'): Record<string, string> {
  return {
    'package.json': JSON.stringify(
      { name: 'tiny', version: '1.0.0', private: true, scripts: { build: 'node build.js', start: 'node server.js' } },
      null,
      2,
    ),
    'package-lock.json': JSON.stringify(
      { name: 'tiny', version: '1.0.0', lockfileVersion: 3, requires: true, packages: { '': { name: 'tiny', version: '1.0.0' } } },
      null,
      2,
    ),
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

export interface TestApp {
  user: TestUser;
  orgId: string;
  orgSlug: string;
  projectId: string;
  appId: string;
}

let seq = 0;
/** An organization, project and application owned by a fresh user, pointed at `repository`. */
export async function createApp(h: Harness, settings: Record<string, unknown> = {}, owner: { admin?: boolean } = {}): Promise<TestApp> {
  seq++;
  const user = await h.user({ admin: owner.admin ?? false });
  const { org, project, app } = await seedApplication(h, user, { org: `Org ${seq} ${user.username}`, project: 'Shop', app: 'Web' });
  // An application may name only its organization's installations: a site administrator links it first.
  if (typeof settings.github_app_installation_id === 'number') await linkInstallation(h, settings.github_app_installation_id, org.slug);
  if (Object.keys(settings).length > 0) {
    const patched = await h.app.inject({
      method: 'PATCH',
      url: `/v1/applications/${app.id}/settings`,
      headers: user.headers,
      payload: settings,
    });
    expect(patched.statusCode).toBe(200);
  }
  return { user, orgId: org.id, orgSlug: org.slug, projectId: project.id, appId: app.id };
}

/** Links a GitHub App installation to an organization as a site administrator (`PUT /v1/github/installations/{id}`). */
export async function linkInstallation(h: Harness, installationId: number, organization: string) {
  const admin = await h.user({ admin: true });
  const linked = await h.app.inject({
    method: 'PUT',
    url: `/v1/github/installations/${installationId}`,
    headers: admin.headers,
    payload: { organization },
  });
  expect(linked.statusCode, linked.body).toBe(200);
}

export async function setConfig(
  h: Harness,
  t: TestApp,
  name: string,
  value: string,
  flags: { secret?: boolean; buildtime?: boolean } = {},
) {
  const res = await h.app.inject({
    method: 'POST',
    url: `/v1/configurations/${t.appId}`,
    headers: t.user.headers,
    payload: { name, value, secret: flags.secret ?? false, buildtime: flags.buildtime ?? false },
  });
  expect(res.statusCode).toBe(201);
}

/** Starts a build and waits until it settles; returns the image log and detail. */
export async function buildAndWait(h: Harness, t: TestApp, body?: Record<string, unknown>) {
  const started = await h.app.inject({
    method: 'POST',
    url: `/v1/images/${t.appId}/build`,
    headers: t.user.headers,
    ...(body ? { payload: body } : {}),
  });
  expect(started.statusCode).toBe(202);
  const { image_id, version } = started.json();
  const log = await waitFor(
    `image ${image_id}`,
    async () => {
      const r = await h.app.inject({ method: 'GET', url: `/v1/images/${image_id}/log`, headers: t.user.headers });
      const body = r.json();
      return body.status === 'building' ? null : body;
    },
    120_000,
    100,
  );
  const detail = (await h.app.inject({ method: 'GET', url: `/v1/images/${image_id}/detail`, headers: t.user.headers })).json();
  return { image_id: image_id as string, version: version as number, log, detail };
}
