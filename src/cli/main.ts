/**
 * `slipway`: the command-line client of the Slipway API (bin/slipway.js runs this).
 * It talks to the REST API only; `npm run admin` (src/admin/) is the administrator's tool
 * that works on the database.
 */
import { Command, CommanderError, Option } from 'commander';
import { createColors } from 'picocolors';
import { ApiError, CliError, EXIT } from './errors.js';
import { authCommands } from './commands/auth.js';
import { configCommands } from './commands/config.js';
import { deployCommands } from './commands/deploy.js';
import { psCommands } from './commands/ps.js';
import { recordCommands } from './commands/records.js';
import { cancelCommands } from './commands/cancel.js';
import { configReleaseCommands } from './commands/config-release.js';
import { resourceCommands } from './commands/resources.js';
import { runtimeCommands } from './commands/runtime.js';
import { rollbackCommand } from './commands/rollback.js';
import { appsSettingsCommands } from './commands/apps-settings.js';
import { doctorCommand } from './commands/doctor.js';
import { launchCommand } from './commands/launch.js';
import { scheduleCommands } from './commands/schedule.js';
import { gitCommands } from './commands/git.js';
import { keyCommands } from './commands/keys.js';
import { memberCommands } from './commands/members.js';
import { sessionCommands } from './commands/sessions.js';
import { sshKeyCommands } from './commands/ssh-keys.js';
import { addonCommands } from './commands/addons.js';
import { volumeCommands } from './commands/volumes.js';
import { notificationCommands } from './commands/notifications.js';
import { drainCommands } from './commands/drains.js';
import { alertCommands } from './commands/alerts.js';
import { maintenanceCommands } from './commands/maintenance.js';
import { execCommand } from './commands/exec.js';
import { composeCommands } from './commands/compose.js';
import { completionScript } from './completion.js';
import { Context } from './context.js';
import { terminalSafe } from './output.js';
import { readSettings, resolveSettings, settingsPath } from './settings.js';

export const VERSION = '0.1.0';

export function buildProgram(): Command {
  const program = new Command('slipway')
    .description('Deploy and run applications on Slipway from a terminal or CI')
    .version(VERSION, '-V, --version')
    .exitOverride()
    .showHelpAfterError('(run `slipway help <command>` for its usage)')
    .addOption(
      new Option('--server <url>', 'Slipway server (env SLIPWAY_SERVER; default: the one you logged in to, else http://localhost:8080)'),
    )
    .addOption(new Option('--api-key <key>', 'API key (env SLIPWAY_API_KEY; default: the one `login` stored)'))
    .addOption(new Option('-a, --app <org/project/app>', 'application (env SLIPWAY_APP; default: the one linked to this directory)'))
    .addOption(new Option('-e, --env <env>', 'environment (env SLIPWAY_ENV; default: production)'))
    .option('--json', 'machine-readable output on stdout');
  program.addHelpText(
    'after',
    `
Configuration: flags > environment (SLIPWAY_SERVER, SLIPWAY_API_KEY, SLIPWAY_APP, SLIPWAY_ENV) > ${settingsPath()}
Exit codes: 0 ok, 1 failed (deploy, build, run…), 2 usage, 3 not found, 4 not logged in / not allowed.
Colour is off when output is not a terminal or NO_COLOR is set.`,
  );

  authCommands(program);
  resourceCommands(program);
  appsSettingsCommands(program);
  doctorCommand(program);
  launchCommand(program);
  configCommands(program);
  deployCommands(program);
  psCommands(program);
  recordCommands(program);
  runtimeCommands(program);
  rollbackCommand(program);
  scheduleCommands(program);
  gitCommands(program);
  cancelCommands(program);
  configReleaseCommands(program);
  keyCommands(program);
  memberCommands(program);
  sessionCommands(program);
  sshKeyCommands(program);
  addonCommands(program);
  volumeCommands(program);
  notificationCommands(program);
  drainCommands(program);
  alertCommands(program);
  maintenanceCommands(program);
  execCommand(program);
  composeCommands(program);

  program
    .command('completion')
    .description('Shell completion script')
    .argument('<shell>', 'bash | zsh | fish')
    .addHelpText(
      'after',
      '\n  bash: eval "$(slipway completion bash)"   (in ~/.bashrc)\n  zsh:  eval "$(slipway completion zsh)"    (in ~/.zshrc)\n  fish: slipway completion fish > ~/.config/fish/completions/slipway.fish',
    )
    .action((shell: string) => {
      if (!['bash', 'zsh', 'fish'].includes(shell)) throw new CliError(`Unknown shell '${shell}': bash, zsh or fish`, EXIT.usage);
      process.stdout.write(completionScript(program, shell));
    });
  return program;
}

/** Runs the CLI and answers the exit code (errors printed as one line, the API's message first). */
export async function run(argv: string[]): Promise<number> {
  // `slipway logs | head`: a closed pipe ends the command quietly.
  for (const stream of [process.stdout, process.stderr])
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE') process.exit(0);
      throw err;
    });
  const program = buildProgram();
  // `slipway help config set` reads as `slipway config set --help` (commander's own help command takes one word).
  const args = argv[0] === 'help' && argv.length > 2 ? [...argv.slice(1), '--help'] : argv;
  try {
    await program.parseAsync(args, { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT.ok;
  } catch (err) {
    return report(err);
  }
}

function report(err: unknown): number {
  const red = createColors(Boolean(process.stderr.isTTY) && !process.env.NO_COLOR).red;
  if (err instanceof CommanderError) {
    // Commander printed the message (or the help); only the code is ours to choose.
    return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
  }
  if ((err as Error)?.name === 'ExitPromptError') return 130; // Ctrl-C at a prompt
  if (err instanceof CliError) {
    let message = err.message;
    if (err instanceof ApiError && err.status === 401) {
      const { apiKeySource, server } = Context.current?.settings ?? resolveSettings({}, process.env, safeSettings());
      message = `${message}\n  The API key${apiKeySource ? ` (from the ${apiKeySource})` : ''} was rejected by ${server}: log in again with \`slipway login\`, or check --api-key / SLIPWAY_API_KEY`;
    }
    process.stderr.write(`${red('Error:')} ${terminalSafe(message)}\n`);
    return err.exitCode;
  }
  process.stderr.write(`${red('Unexpected error:')} ${(err as Error)?.stack ?? String(err)}\n`);
  return EXIT.failure;
}

function safeSettings() {
  try {
    return readSettings();
  } catch {
    return {};
  }
}
