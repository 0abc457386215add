import type { AnclaCall } from './types.js';

/**
 * The Go CLI's `cache info|cli|flush` and `dbshell` (internal/cli/cache.go, dbshell.go): the
 * Redis and Postgres attached to a service, here the add-ons attached to the application in the
 * environment. The CLI decodes `password` and `url` too; Slipway never answers a secret, and Go
 * reads an absent field as "" (the CLI then connects with host and port, without a password), so
 * only the fields answered are listed. Its request and answer: test/ancla-contract/addons.test.ts.
 */
export const TESTS = {
  cache: 'reads the cache of a service: engine, host and port, never the password',
  flush: 'flushes the cache of a service through the add-on connection of the platform (admins only)',
  database: 'reads the database of a service: engine, host, port, name and user, never the password',
} as const;

const S = '/api/v1/workspaces/{ws}/projects/{proj}/envs/{env}/services';
const test = (title: string) => `addons.test.ts > ${title}`;

export const calls: AnclaCall[] = [
  {
    client: 'go-cli',
    method: 'GET',
    path: `${S}/{svc}/cache`,
    decodes: ['engine:string', 'host:string', 'port:integer'],
    test: test(TESTS.cache),
  },
  { client: 'go-cli', method: 'POST', path: `${S}/{svc}/cache/flush`, decodes: [], test: test(TESTS.flush) },
  {
    client: 'go-cli',
    method: 'GET',
    path: `${S}/{svc}/database`,
    decodes: ['engine:string', 'host:string', 'port:integer', 'name:string', 'user:string'],
    test: test(TESTS.database),
  },
];
