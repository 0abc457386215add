import type { Config } from '../config.js';
import type { Db } from './db/database.js';
import type { SecretBox } from './crypto/secret-box.js';

/** What every module's service needs from the platform, built once in main.ts (or a test). */
export interface AppContext {
  config: Config;
  db: Db;
  secrets: SecretBox;
}
