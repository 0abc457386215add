type Undici = typeof import('undici');

/**
 * undici, loaded where it is first needed rather than at start (~0.8 MB of code to compile). In the bundle
 * (scripts/build-server.mjs) a CommonJS package imported on demand arrives as its exports under `default`;
 * from source, node also names them one by one.
 */
export async function loadUndici(): Promise<Pick<Undici, 'Pool' | 'request'>> {
  const loaded = (await import('undici')) as unknown as Partial<Undici> & { default?: Undici };
  return loaded.Pool ? (loaded as Undici) : loaded.default!;
}
