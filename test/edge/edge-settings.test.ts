/**
 * An edge process spawned by the control plane takes the settings the control plane validated
 * (SLIPWAY_EDGE_SETTINGS) instead of loading the configuration's TypeBox schema: what it reads must be
 * exactly what validating the same environment in the edge role gives. The spawned edge itself is
 * exercised end to end by separate-edge.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { EDGE_SETTING_NAMES, EDGE_SETTINGS_ENV, edgeSettingsOf, handedEdgeSettings } from '../../src/platform/edge/edge-settings.js';

const env = {
  DATA_DIR: 'relative/data',
  ROUTER_HOST: '127.0.0.1',
  ROUTER_PORT: '8081',
  ROUTER_HTTPS_PORT: '8443',
  EDGE_DRIVER: 'nginx',
  LOG_LEVEL: 'debug',
  REQUEST_STATS_FLUSH_MS: '1500',
  SECRET_KEY: 'k'.repeat(44),
  ACME_EMAIL: 'ops@example.com',
};
const databaseUrl = 'postgres://slipway:secret@%2Ftmp%2Fsock:5432/slipway';

describe('the settings a control plane hands to the edge process it spawns', () => {
  it('are what the edge role would have read from the same environment', () => {
    const handed = handedEdgeSettings({
      SLIPWAY_ROLE: 'edge',
      [EDGE_SETTINGS_ENV]: edgeSettingsOf(loadConfig(env), { SLIPWAY_ROLE: 'edge', EDGE_LOG: 'file', DATABASE_URL: databaseUrl }),
    });
    const own = loadConfig({ ...env, SLIPWAY_ROLE: 'edge', EDGE_LOG: 'file', DATABASE_URL: databaseUrl });
    expect(handed).toEqual(Object.fromEntries(EDGE_SETTING_NAMES.map((name) => [name, own[name]])));
    expect(handed).toMatchObject({ ROUTER_PORT: 8081, REQUEST_STATS_FLUSH_MS: 1500, EDGE_DRIVER: 'nginx', ACME_DIRECTORY_URL: undefined });
    expect(handed!.dataDir).toBe(own.dataDir);
  });

  it('are ignored (the edge validates its environment) outside the edge role, when unreadable, or written by another version', () => {
    const text = edgeSettingsOf(loadConfig(env), { SLIPWAY_ROLE: 'edge', EDGE_LOG: 'file', DATABASE_URL: databaseUrl });
    expect(handedEdgeSettings({ SLIPWAY_ROLE: 'all', [EDGE_SETTINGS_ENV]: text })).toBeNull();
    expect(handedEdgeSettings({ SLIPWAY_ROLE: 'edge', [EDGE_SETTINGS_ENV]: '{not json' })).toBeNull();
    const older = JSON.parse(text) as Record<string, unknown>;
    delete older.ROUTER_RETRY_WINDOW_MS;
    expect(handedEdgeSettings({ SLIPWAY_ROLE: 'edge', [EDGE_SETTINGS_ENV]: JSON.stringify(older) })).toBeNull();
    expect(handedEdgeSettings({ SLIPWAY_ROLE: 'edge' })).toBeNull();
  });
});
