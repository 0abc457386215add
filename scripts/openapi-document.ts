import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { generateKeyText, parseKey, SecretBox } from '../src/platform/crypto/secret-box.js';
import { createDb } from '../src/platform/db/database.js';

/**
 * The API's OpenAPI document (the one served at /v1/openapi.json), built without a
 * database: routes are registered, nothing is queried.
 */
export async function openApiDocument(): Promise<Record<string, unknown>> {
  const config = loadConfig({}, { DATABASE_URL: 'postgres://unused@127.0.0.1:1/unused', LOG_LEVEL: 'silent' });
  const db = createDb(config.DATABASE_URL!, 1);
  const app = await buildApp({ config, db, secrets: new SecretBox({ current: parseKey(generateKeyText()), previous: [] }) });
  try {
    await app.ready();
    return app.swagger() as unknown as Record<string, unknown>;
  } finally {
    await app.close();
    await db.destroy();
  }
}
