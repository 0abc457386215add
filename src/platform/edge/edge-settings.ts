import type { Config } from '../../config.js';

/** Every setting an edge process reads: its role, log, database, keys, ports and driver. */
export const EDGE_SETTING_NAMES = [
  'SLIPWAY_ROLE',
  'LOG_LEVEL',
  'EDGE_LOG',
  'dataDir',
  'DATABASE_URL',
  'EMBEDDED_PG_PORT',
  'SECRET_KEY',
  'SECRET_KEY_PREVIOUS',
  'REQUEST_STATS_FLUSH_MS',
  'ROUTER_DRAIN_TIMEOUT_MS',
  'ROUTER_HOST',
  'ROUTER_PORT',
  'ROUTER_HTTPS_PORT',
  'ROUTER_RETRY_WINDOW_MS',
  'EDGE_DRIVER',
  'EDGE_NGINX_USER',
  'EDGE_HAPROXY_USER',
  'CADDY_ADMIN_URL',
  'CADDY_ADMIN_ALLOW_TCP',
  'CADDY_ACCESS_LOG_GID',
  'EDGE_CERTIFICATES',
  'ACME_DIRECTORY_URL',
  'ACME_EMAIL',
  'ACME_CA_FILE',
] as const satisfies ReadonlyArray<keyof Config>;

/** The configuration as an edge process sees it (a Config is one). */
export type EdgeSettings = Pick<Config, (typeof EDGE_SETTING_NAMES)[number]>;

/**
 * The environment variable through which a control plane hands the edge process it spawns its settings, already
 * validated by the control plane's own loadConfig (the same environment). The edge then never builds the
 * configuration's schema nor loads TypeBox, which is about a fifth of its memory at rest (bench/README.md).
 * An edge started by an operator (`SLIPWAY_ROLE=edge`) has no such variable and validates its environment itself.
 */
export const EDGE_SETTINGS_ENV = 'SLIPWAY_EDGE_SETTINGS';

/** The settings of an edge this control plane spawns (unset ones as null: a reader tells them from unknown ones). */
export function edgeSettingsOf(config: Config, own: Pick<EdgeSettings, 'SLIPWAY_ROLE' | 'EDGE_LOG' | 'DATABASE_URL'>): string {
  const settings: EdgeSettings = { ...config, ...own };
  return JSON.stringify(Object.fromEntries(EDGE_SETTING_NAMES.map((name) => [name, settings[name] ?? null])));
}

/**
 * The settings a control plane handed over, or null when there are none, or when they lack a setting this
 * version reads (written by another version of the control plane: the edge validates its environment then).
 */
export function handedEdgeSettings(env: NodeJS.ProcessEnv = process.env): EdgeSettings | null {
  const text = env[EDGE_SETTINGS_ENV];
  if (env.SLIPWAY_ROLE !== 'edge' || !text) return null;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) return null;
  const handed = value as Record<string, unknown>;
  if (handed.SLIPWAY_ROLE !== 'edge' || !EDGE_SETTING_NAMES.every((name) => name in handed)) return null;
  return Object.fromEntries(EDGE_SETTING_NAMES.map((name) => [name, handed[name] ?? undefined])) as EdgeSettings;
}
