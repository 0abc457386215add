import { expect } from 'vitest';
import type { Harness } from '../helpers/harness.js';
export { sandboxMissing } from '../helpers/sandbox.js';
import { waitFor } from '../helpers/wait.js';
import type { TestApp } from '../pipeline-build/fixtures.js';

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
