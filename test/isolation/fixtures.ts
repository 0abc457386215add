import { expect } from 'vitest';
import type { Harness } from '../helpers/harness.js';
export { sandboxMissing } from '../helpers/sandbox.js';
import { waitFor } from '../helpers/wait.js';
import { TestRepo } from '../helpers/git-repo.js';
import { pythonHttpApp } from '../helpers/python-app.js';
import { createApp, type TestApp } from '../pipeline-build/fixtures.js';

/** POST /deploy (build → release → deploy) and wait for both records to settle. */
export async function chainDeploy(h: Harness, t: TestApp) {
  const r = await h.app.inject({ method: 'POST', url: `/v1/applications/${t.appId}/deploy`, headers: t.user.headers });
  expect(r.statusCode, r.body).toBe(202);
  const { image_id } = r.json();
  const image = await waitFor(
    'the build',
    async () => {
      const i = (await h.app.inject({ method: 'GET', url: `/v1/images/${image_id}/detail`, headers: t.user.headers })).json();
      return i.built || i.error ? i : null;
    },
    120_000,
  );
  if (image.error) return { image, deployment: null };
  const deployment = await waitFor(
    'the deployment',
    async () => {
      const list = (await h.app.inject({ method: 'GET', url: `/v1/applications/${t.appId}/deployments`, headers: t.user.headers })).json();
      const d = list.items.find((x: { created: string }) => Date.parse(x.created) >= Date.parse(image.created));
      if (!d) return null;
      const detail = (await h.app.inject({ method: 'GET', url: `/v1/deployments/${d.id}/detail`, headers: t.user.headers })).json();
      return detail.complete || detail.error ? detail : null;
    },
    120_000,
  );
  return { image, deployment };
}

/** POST a one-off run of `command` and wait for it to end: the run record and its log text. */
export async function runToEnd(h: Harness, t: TestApp, command: string, options: { timeoutSeconds?: number; waitMs?: number } = {}) {
  const queued = await h.app.inject({
    method: 'POST',
    url: `/v1/applications/${t.appId}/runs`,
    headers: t.user.headers,
    payload: { command, timeout_seconds: options.timeoutSeconds ?? 60 },
  });
  expect(queued.statusCode, queued.body).toBeLessThan(300);
  const run = await waitFor(
    'the one-off run',
    async () => {
      const r = (await h.app.inject({ method: 'GET', url: `/v1/runs/${queued.json().id}`, headers: t.user.headers })).json();
      return ['succeeded', 'failed', 'timed_out'].includes(r.status) ? r : null;
    },
    options.waitMs ?? 60_000,
    200,
  );
  const log: string = (await h.app.inject({ method: 'GET', url: `/v1/runs/${run.id}/log`, headers: t.user.headers })).json().log_text;
  return { run, log };
}

/** Another organization's application that must keep serving ("victim ok") while a test attacks: built, deployed, its host name. */
export async function deployVictim(h: Harness, repos: TestRepo[], setup = '') {
  const repo = new TestRepo();
  repos.push(repo);
  repo.commit({ 'server.py': pythonHttpApp("'victim ok'", setup), Procfile: 'web: python3 server.py\n' });
  const app = await createApp(h, {
    github_repository: repo.dir,
    auto_deploy_branch: 'main',
    health_check_path: '/',
    deployment_timeout: 60,
  });
  const { image, deployment } = await chainDeploy(h, app);
  expect(deployment?.complete, JSON.stringify(deployment ?? image)).toBe(true);
  return { app, host: new URL(deployment.deploy_metadata.url).hostname };
}
