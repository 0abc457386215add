/** The CLI's API types are generated from the API's OpenAPI document: a route changed without `npm run client:types` fails here. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CLIENT_TYPES_FILE, generateClientTypes } from '../../scripts/client-types.js';

describe('src/cli/api-types.ts', () => {
  it('is current with the routes (run `npm run client:types` after changing a route)', async () => {
    const generated = await generateClientTypes();
    expect(generated).toContain("'/v1/organizations'".replace(/'/g, '"'));
    // Shared schemas are named components (their TypeBox $id), referenced rather than inlined.
    expect(generated).not.toMatch(/"def-\d+"/);
    expect(generated).toContain('ApplicationDetail: {');
    expect(generated).toContain('components["responses"]["Error"]');
    expect(readFileSync(CLIENT_TYPES_FILE, 'utf8') === generated, 'src/cli/api-types.ts is out of date: run `npm run client:types`').toBe(
      true,
    );
  });
});
