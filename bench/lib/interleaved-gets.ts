import autocannon from 'autocannon';

/** One GET the bench measures: a label for the output and its path. */
export interface GetCase {
  label: string;
  path: string;
}

export interface GetFigures {
  /** Medians over the rounds. */
  requestsPerSecond: number;
  p99: number;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/**
 * Each case once first (its answer must be 2xx: a sanity check, and the cold latency printed), then
 * `rounds` rounds in which every case runs in turn (interleaved, so a noisy moment hits them all); the
 * medians of its rounds. Any non-2xx, error or timeout under load aborts the bench.
 */
export async function measureGets<C extends GetCase>(
  target: { appUrl: string; auth: Record<string, string> },
  cases: C[],
  options: { rounds: number; duration: number; connections: number },
): Promise<Map<C, GetFigures>> {
  for (const c of cases) {
    const started = performance.now();
    const res = await fetch(`${target.appUrl}${c.path}`, { headers: target.auth });
    const body = await res.text();
    if (!res.ok) throw new Error(`${c.path}: ${res.status} ${body.slice(0, 300)}`);
    console.error(`first ${c.label}: ${Math.round(performance.now() - started)} ms, ${body.length} bytes`);
  }
  const p99 = new Map<C, number[]>(cases.map((c) => [c, []]));
  const rps = new Map<C, number[]>(cases.map((c) => [c, []]));
  for (let round = 1; round <= options.rounds; round++) {
    for (const c of cases) {
      const r = await autocannon({
        url: `${target.appUrl}${c.path}`,
        headers: target.auth,
        connections: options.connections,
        duration: options.duration,
      });
      if (r.non2xx || r.errors || r.timeouts) throw new Error(`${c.path}: ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts`);
      p99.get(c)!.push(r.latency.p99);
      rps.get(c)!.push(r.requests.average);
      console.error(`round ${round} ${c.label}: ${Math.round(r.requests.average)} req/s, p99 ${r.latency.p99} ms`);
    }
  }
  return new Map(cases.map((c) => [c, { requestsPerSecond: median(rps.get(c)!), p99: median(p99.get(c)!) }]));
}
