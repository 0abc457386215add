/** What a benchmark case file in bench/cases/ exports (`export default [...]`). */
export interface BenchTarget {
  path: string;
  method?: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  headers?: Record<string, string>;
  body?: string;
}

export interface SeededWorld {
  org: { id: string; slug: string };
  project: { id: string; slug: string };
  app: { id: string; slug: string };
}

export interface BenchContext {
  /** Base URL of the running Slipway server. */
  appUrl: string;
  /** Headers that authenticate as the benchmark's administrator. */
  auth: Record<string, string>;
  /** Authenticated JSON call to the server; throws on an error status. */
  api<T = unknown>(method: string, path: string, body?: unknown): Promise<T>;
  /** One organization, project and application, created on first use. */
  world(): Promise<SeededWorld>;
}

export interface BenchCase {
  name: string;
  /** Creates what the case needs, then names the request to repeat under load. */
  prepare(ctx: BenchContext): Promise<BenchTarget>;
  /**
   * The best hand-written server (bench/handwritten-best-server.ts) answers the same request:
   * it is measured beside the case, in the same rounds, and the case's ratio is to it.
   */
  handwritten?: boolean;
}
