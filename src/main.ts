import { buildApp } from './app.js';
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
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'stopping');
    await app.close();
    await platform.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));

  await app.listen({ port: config.PORT, host: config.HOST });
}

main().catch((err) => {
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(1);
});
