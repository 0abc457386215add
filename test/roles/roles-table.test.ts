/** docs/roles.md is generated from the route table: a route or rule added without regenerating it fails here. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { apiRoutes, REGENERATE, renderRolesTable, ROLES_TABLE_FILE } from '../../scripts/roles-table.js';

describe('docs/roles.md', () => {
  it('is the table of every route against every role', async () => {
    const routes = (await apiRoutes()).filter((r) => r.url.startsWith('/v1/'));
    expect(routes.length).toBeGreaterThan(100);
    const generated = renderRolesTable(routes);
    for (const route of routes) expect(generated).toContain(`| ${route.method} | \`${route.url}\` |`);
    expect(readFileSync(ROLES_TABLE_FILE, 'utf8') === generated, `docs/roles.md is out of date: run \`${REGENERATE}\``).toBe(true);
  });
});
