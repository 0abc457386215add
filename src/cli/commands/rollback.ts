import { confirm } from '@inquirer/prompts';
import type { Command } from 'commander';
import { ok, type Paths } from '../api.js';
import { Context } from '../context.js';
import { CliError } from '../errors.js';
import { followLog, sleep } from '../follow.js';
import { appPath } from './deploy.js';
import { releaseId } from './records.js';

type Preview = Paths['/v1/applications/{application_id}/rollback/preview']['get']['responses']['200']['content']['application/json'];
type Offer = Preview['restore_offers'][number];

/**
 * `slipway rollback [release]`: the previous release (or the one named) again. A rollback never
 * undoes what a release's migrations did to its database; when a release being undone ran its
 * release command against an attached Postgres add-on, the restore point taken before it is
 * offered, explicitly: `--restore-database` (or yes at the prompt) restores it into a fork once
 * the rollback has deployed, then points the application at the fork in a new release.
 */
export function rollbackCommand(program: Command) {
  program
    .command('rollback')
    .description('Deploy the previous release again (or the one named: v<version> or id)')
    .argument('[release]')
    .option('-w, --wait', 'follow the deployment; exit 1 when it fails')
    .option('--restore-database', "also restore each attached database to before the undone releases' migrations (into a fork, swapped in)")
    .option('--no-restore-database', 'roll back the code only, without asking')
    .action(async (release: string | undefined, o: { wait?: boolean; restoreDatabase?: boolean }, command: Command) => {
      const ctx = Context.of(command);
      const app = await ctx.app();
      const target = release ? await releaseId(ctx, release) : undefined;
      const choice = { ...(target ? { release_id: target } : {}), ...(ctx.options.env ? { environment: ctx.options.env } : {}) };
      const preview = await ok(
        ctx.api.GET('/v1/applications/{application_id}/rollback/preview', { params: { path: { application_id: app.id }, query: choice } }),
      );
      if (!preview.target) throw new CliError(preview.refusal ?? 'There is nothing to roll back to');
      const restore = preview.restore_offers.length > 0 && (await restoreChosen(ctx, preview, preview.target.version, o.restoreDatabase));
      const deployment = await ok(
        ctx.api.POST('/v1/applications/{application_id}/rollback', { params: { path: { application_id: app.id } }, body: choice }),
      );
      const version = `v${deployment.release.version}`;
      if (!o.wait && !restore)
        return ctx.out.result(deployment, () => `Rolling ${appPath(app)} back to ${version} (deployment ${deployment.id})`);
      const outcome = await followLog(ctx, 'deployment', deployment.id, (line) =>
        (ctx.out.json ? ctx.out.stderr : ctx.out.stdout).write(`${line}\n`),
      );
      if (outcome.status === 'error') throw new CliError(`Rollback failed: ${outcome.error_detail ?? 'see the log above'}`);
      let final = await ok(ctx.api.GET('/v1/deployments/{deployment_id}/detail', { params: { path: { deployment_id: deployment.id } } }));
      while (final.status === 'deploying') {
        await sleep(500);
        final = await ok(ctx.api.GET('/v1/deployments/{deployment_id}/detail', { params: { path: { deployment_id: deployment.id } } }));
      }
      // Only once the old code serves: the swap's release runs on the image serving then.
      const restored = restore ? await restoreAll(ctx, app.organization_slug, preview) : [];
      ctx.out.result({ ...final, restored }, () => [
        ctx.out.colors.green(`Rolled ${appPath(app)} back to ${version}`),
        ...restored.map(
          (r) => `${r.variable} now points at ${r.fork}: ${r.addon} as before v${r.release_version} (${r.addon} stays, detached)`,
        ),
      ]);
    });
}

/** Says what the rollback leaves in the database, and whether to restore it: the flag, else a question at a terminal. */
async function restoreChosen(ctx: Context, preview: Preview, targetVersion: number, flag: boolean | undefined): Promise<boolean> {
  const err = ctx.out.stderr;
  for (const offer of preview.restore_offers)
    err.write(
      `Release v${offer.release.version} ran its release command on the add-on ${offer.addon.name} (${offer.variable}); ` +
        `rolling back to v${targetVersion} leaves its data as it is now. Restore point: ${offer.restore_point}\n`,
    );
  if (flag !== undefined) return flag;
  if (!process.stdin.isTTY) {
    err.write('Rolling back the code only (add --restore-database to restore the data too, --no-restore-database to say so)\n');
    return false;
  }
  return confirm({
    message: `Also restore ${preview.restore_offers.map((o) => o.addon.name).join(', ')} to before those migrations (into a fork, swapped in)?`,
    default: false,
  });
}

/** Each offer: restored into a new add-on at its restore point, then swapped in for the one in use. */
async function restoreAll(ctx: Context, org: string, preview: Preview) {
  const done = [];
  for (const offer of preview.restore_offers) done.push(await restoreOne(ctx, org, offer));
  return done;
}

async function restoreOne(ctx: Context, org: string, offer: Offer) {
  const fork = `${offer.addon.name}-before-v${offer.release.version}`.slice(0, 63);
  const at = (addon: string) => ({ params: { path: { org_slug: org, addon } } });
  ctx.out.stderr.write(`Restoring ${offer.addon.name} to ${offer.restore_point} into ${fork}\n`);
  let a = await ok(
    ctx.api.POST('/v1/organizations/{org_slug}/addons/{addon}/restore', {
      ...at(offer.addon.name),
      body: { name: fork, release_id: offer.release.id },
    }),
  );
  let shown = '';
  while (a.status === 'creating') {
    if (a.status_detail && a.status_detail !== shown) ctx.out.stderr.write(`${(shown = a.status_detail)}\n`);
    await sleep(500);
    a = await ok(ctx.api.GET('/v1/organizations/{org_slug}/addons/{addon}', at(fork)));
  }
  if (a.status !== 'running')
    throw new CliError(`The code is rolled back, but restoring ${offer.addon.name} into ${fork} failed: ${a.status_detail ?? a.status}`);
  const swapped = await ok(
    ctx.api.POST('/v1/organizations/{org_slug}/addons/{addon}/swap', {
      ...at(fork),
      body: { attachment_id: offer.attachment_id, confirm: true },
    }),
  );
  for (const r of swapped.releases) {
    const outcome = await followLog(ctx, 'deployment', r.deployment_id, (line) => ctx.out.stderr.write(`${line}\n`));
    if (outcome.status === 'error') throw new CliError(`${fork} is attached, but its release failed: ${outcome.error_detail ?? ''}`);
  }
  return {
    addon: offer.addon.name,
    fork,
    variable: offer.variable,
    release_version: offer.release.version,
    deployments: swapped.releases.map((r) => r.deployment_id),
  };
}
