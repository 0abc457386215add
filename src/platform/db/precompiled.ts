import type { CompiledQuery, Compilable } from 'kysely';
import { prepareOnEveryConnection, type Db } from './database.js';

/** Stands in for a value while a query is compiled; replaced by the caller's value at each run. */
class Placeholder {
  constructor(readonly name: string) {}
}

/**
 * A query built and compiled once, then run with new values: for the hottest reads, where
 * building the Kysely query tree on every request was a measurable share of the request's CPU
 * (bench/README.md). `build` receives a placeholder per parameter and must produce the same SQL
 * whatever the values (no branching on them); the values travel as bind parameters, as always.
 */
export function precompiled<P extends Record<string, unknown>, R>(
  db: Db,
  names: readonly (keyof P & string)[],
  build: (params: P) => Compilable<R>,
): (values: P) => Promise<R[]> {
  let compiled: CompiledQuery<R> | undefined;
  return async (values) => {
    if (!compiled) {
      compiled = build(Object.fromEntries(names.map((n) => [n, new Placeholder(n)])) as unknown as P).compile();
      const unused = names.filter((n) => !compiled!.parameters.some((p) => p instanceof Placeholder && p.name === n));
      if (unused.length) throw new Error(`precompiled query does not use ${unused.join(', ')}`);
      prepareOnEveryConnection(compiled.sql);
    }
    const parameters = compiled.parameters.map((p) => (p instanceof Placeholder ? values[p.name] : p));
    return (await db.executeQuery<R>({ ...compiled, parameters })).rows;
  };
}
