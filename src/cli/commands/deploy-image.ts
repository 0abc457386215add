import { ok } from '../api.js';
import type { Context, AppDetail } from '../context.js';
import { CliError } from '../errors.js';
import { followLog, sleep } from '../follow.js';

interface ImageAccepted {
  ok: boolean;
  image_id: string;
  image?: string;
  job_id?: string;
}

/**
 * `slipway deploy --image REF`: releases an image already pushed to a registry (no build).
 * The server pins it by digest; with --wait the pull's log and the deployment's are followed.
 */
export async function deployImage(ctx: Context, app: AppDetail, env: string, image: string, wait: boolean) {
  // Sent untyped until the generated API types (npm run client:types) carry the deploy body.
  const accepted = (await ok(
    ctx.api.POST('/v1/applications/{application_id}/deploy', {
      params: { path: { application_id: app.id } },
      body: { image, environment: env } as never,
    }),
  )) as ImageAccepted;
  const where = `${app.organization_slug}/${app.project_slug}/${app.slug}`;
  if (!wait) {
    return ctx.out.result(
      accepted,
      () => `Deploying ${accepted.image ?? image} to ${where} (${env}): \`slipway status\` shows how it goes`,
    );
  }
  const pulled = await followLog(ctx, 'build', accepted.image_id, (l) => ctx.out.stderr.write(`${l}\n`));
  if (pulled.status !== 'built') throw new CliError(`The image could not be deployed: ${pulled.error_detail ?? pulled.status}`);
  const deployment = (await deploymentOfChain(ctx, app, accepted.job_id ?? '')).id;
  const done = await followLog(ctx, 'deployment', deployment, (l) => ctx.out.stderr.write(`${l}\n`));
  if (done.status !== 'complete') throw new CliError(`Deploy failed: ${done.error_detail ?? done.status}`);
  const settled = await deploymentOfChain(ctx, app, accepted.job_id ?? '');
  const url = (settled.deploy_metadata as { url?: string } | null)?.url ?? null;
  ctx.out.result({ ...accepted, deployment_id: deployment, url }, () =>
    ctx.out.colors.green(`Deployed ${accepted.image ?? image} to ${where} (${env})${url ? `: ${url}` : ''}`),
  );
}

/** The deployment the chain job makes of this image (its release comes first): asked until it exists. */
async function deploymentOfChain(ctx: Context, app: AppDetail, jobId: string) {
  for (let i = 0; i < 300; i++) {
    const list = await ok(
      ctx.api.GET('/v1/applications/{application_id}/deployments', {
        params: { path: { application_id: app.id }, query: { per_page: 5 } },
      }),
    );
    const found = list.items.find((d) => d.job_id === jobId);
    if (found) return found;
    await sleep(1000);
  }
  throw new CliError('The image was pulled, but no deployment of it appeared: `slipway status` shows why');
}
