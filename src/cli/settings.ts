import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

/** An application remembered for a directory (`slipway apps link`). */
export interface Link {
  application_id: string;
  /** organization/project/application slugs, for people */
  name: string;
}

/** What the CLI keeps between runs, in the user's config directory (mode 0600: it holds an API key). */
export interface StoredSettings {
  server?: string;
  api_key?: string;
  /** Id of the stored key when `login` created it (so `logout` can revoke it). */
  api_key_id?: string;
  /** Absolute directory → linked application. */
  links?: Record<string, Link>;
}

export const DEFAULT_SERVER = 'http://localhost:8080';

/** `$SLIPWAY_CONFIG`, else `$XDG_CONFIG_HOME/slipway/config.json`, else `~/.config/slipway/config.json`. */
export function settingsPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.SLIPWAY_CONFIG) return resolve(env.SLIPWAY_CONFIG);
  const base = env.XDG_CONFIG_HOME && env.XDG_CONFIG_HOME.startsWith('/') ? env.XDG_CONFIG_HOME : join(homedir(), '.config');
  return join(base, 'slipway', 'config.json');
}

export function readSettings(path = settingsPath()): StoredSettings {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw err;
  }
  try {
    return JSON.parse(text) as StoredSettings;
  } catch {
    throw new Error(`${path} is not valid JSON: fix or delete it`);
  }
}

/** Writes atomically, readable by the owner only (the file holds an API key). */
export function writeSettings(settings: StoredSettings, path = settingsPath()) {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const temp = `${path}.${process.pid}.tmp`;
  writeFileSync(temp, `${JSON.stringify(settings, null, 2)}\n`, { mode: 0o600 });
  chmodSync(temp, 0o600);
  renameSync(temp, path);
}

export function updateSettings(change: (s: StoredSettings) => void, path = settingsPath()) {
  const settings = readSettings(path);
  change(settings);
  writeSettings(settings, path);
}

/** The link of `dir` or of its nearest linked parent (like git finds its repository). */
export function findLink(settings: StoredSettings, dir: string): Link | undefined {
  let current = resolve(dir);
  for (;;) {
    const link = settings.links?.[current];
    if (link) return link;
    const parent = dirname(current);
    if (parent === current) return undefined;
    current = parent;
  }
}

export interface ResolvedSettings {
  server: string;
  apiKey?: string;
  /** Where the key came from, for error messages. */
  apiKeySource?: 'flag' | 'environment' | 'config file';
}

/** Precedence: flags > environment (SLIPWAY_SERVER, SLIPWAY_API_KEY) > config file. */
export function resolveSettings(
  flags: { server?: string; apiKey?: string },
  env: NodeJS.ProcessEnv,
  stored: StoredSettings,
): ResolvedSettings {
  const server = (flags.server ?? env.SLIPWAY_SERVER ?? stored.server ?? DEFAULT_SERVER).replace(/\/+$/, '').replace(/\/v1$/, '');
  if (flags.apiKey) return { server, apiKey: flags.apiKey, apiKeySource: 'flag' };
  if (env.SLIPWAY_API_KEY) return { server, apiKey: env.SLIPWAY_API_KEY, apiKeySource: 'environment' };
  if (stored.api_key) return { server, apiKey: stored.api_key, apiKeySource: 'config file' };
  return { server };
}
