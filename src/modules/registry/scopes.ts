/**
 * Scopes of the Docker registry token specification:
 * `resourcetype[(class)]:resourcename:action[,action...]`. The name may itself hold ':'
 * (a registry host with a port), so type ends at the first ':' and actions start after
 * the last one.
 */
export interface RequestedScope {
  type: string;
  name: string;
  actions: string[];
}

export type { GrantedAccess } from '../../platform/crypto/registry-token.js';

/** Parses every `scope` value; one value may hold several scopes separated by spaces (OAuth form). */
export function parseScopes(values: string[]): RequestedScope[] {
  const scopes: RequestedScope[] = [];
  for (const value of values) {
    for (const item of value.split(' ').filter(Boolean)) {
      const first = item.indexOf(':');
      const last = item.lastIndexOf(':');
      if (first <= 0 || last === first) continue; // malformed: grants nothing, like an unknown resource
      const type = item.slice(0, first).replace(/\(.*\)$/, '');
      const name = item.slice(first + 1, last);
      const actions = [
        ...new Set(
          item
            .slice(last + 1)
            .split(',')
            .map((a) => a.trim())
            .filter(Boolean),
        ),
      ];
      if (name) scopes.push({ type, name, actions });
    }
  }
  return scopes;
}

/** Repository names are `<organization>/<project>/<application>` slugs. */
export function repositorySlugs(name: string): [string, string, string] | null {
  const parts = name.split('/');
  if (parts.length !== 3 || parts.some((p) => !/^[a-z0-9]+(?:[._-][a-z0-9]+)*$/.test(p))) return null;
  return parts as [string, string, string];
}
