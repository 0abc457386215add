/**
 * `backup <file>` and `restore <file> [--force]` of the command line (issue 37): the control
 * plane's database, keys and artifacts in one archive (src/platform/backup/control-plane-backup.ts).
 * Prints paths and sizes only, never a key.
 */
import type { Command } from 'commander';
import { loadConfig, type Config } from '../config.js';
import { moveArtifactRoot } from '../pipeline/index.js';
import { backupControlPlane, restoreControlPlane } from '../platform/backup/control-plane-backup.js';
import { openPlatform } from '../platform/bootstrap.js';

export const BACKUP_USAGE = `  backup <file>       archive the control plane (database, keys, registry keys, built artifacts) into <file>, mode 0600
  restore <file> [--force]
                      unpack a backup into an empty DATA_DIR (--force: replace what it holds); then start Slipway
`;

export interface OfflineCommand {
  options: Record<string, { type: 'string' | 'boolean' }>;
  /** Whether it needs the database opened (backup) or must run before anything touches DATA_DIR (restore). */
  opensPlatform: boolean;
  run(config: Config, file: string, flags: Record<string, string | boolean | undefined>): Promise<void>;
}

export const backupCommands: Record<string, OfflineCommand> = {
  backup: {
    options: {},
    opensPlatform: true,
    async run(config, file) {
      const made = await backupControlPlane(config, file);
      console.log(`backup written to ${made.file} (${made.bytes} bytes, mode 0600): ${made.members.join(', ')}`);
      if (config.DATABASE_URL)
        console.error('note: DATABASE_URL is set: the archive holds the keys and files only; back that database up with pg_dump');
    },
  },
  restore: {
    options: { force: { type: 'boolean' } },
    opensPlatform: false,
    async run(config, file, flags) {
      const manifest = await restoreControlPlane(config, file, { force: flags.force === true });
      if (manifest.dataDir !== config.dataDir && manifest.members.includes('images')) {
        // Restored elsewhere than it was made: the records' artifact paths follow the artifacts.
        const platform = await openPlatform(config, () => {}, { pipeline: false });
        try {
          const moved = await moveArtifactRoot(platform.ctx.db, manifest.dataDir, config.dataDir);
          console.log(`artifact paths of ${moved} images moved from ${manifest.dataDir} to ${config.dataDir}`);
        } finally {
          await platform.close();
        }
      }
      console.log(`restored the backup of ${manifest.created} into ${config.dataDir}: ${manifest.members.join(', ')}; start Slipway on it`);
    },
  },
};

/** Registers `backup <file>` and `restore <file> [--force]` on the admin program. */
export function addBackupCommands(program: Command): void {
  for (const [name, command] of Object.entries(backupCommands)) {
    const registered = program.command(`${name} <file>`);
    for (const option of Object.keys(command.options)) registered.option(`--${option}`);
    registered.action(async (file: string, flags: Record<string, string | boolean | undefined>) => {
      const config = loadConfig();
      if (!command.opensPlatform) return command.run(config, file, flags);
      const platform = await openPlatform(config, () => {}, { pipeline: false });
      try {
        await command.run(config, file, flags);
      } finally {
        await platform.close();
      }
    });
  }
}
