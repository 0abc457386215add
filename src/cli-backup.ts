/**
 * `backup <file>` and `restore <file> [--force]` of the command line (issue 37): the control
 * plane's database, keys and artifacts in one archive (src/platform/backup/control-plane-backup.ts).
 * Prints paths and sizes only, never a key.
 */
import type { Config } from './config.js';
import { moveArtifactRoot } from './modules/images/index.js';
import { backupControlPlane, restoreControlPlane } from './platform/backup/control-plane-backup.js';
import { openPlatform } from './platform/bootstrap.js';

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
