import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { AppContext } from '../context.js';
import { findOnPath } from '../builder/buildah.js';
import { installedNodes } from '../builder/runtime-versions.js';
import { CgroupHierarchy, createSandbox, SandboxUnavailable } from '../sandbox/index.js';
import { loadUndici } from '../http/load-undici.js';

const exec = promisify(execFile);

/** Longest one probe may take: a check that hangs is reported as failed, never holds the answer. */
const PROBE_TIMEOUT_MS = 5000;

export type CheckState = 'ok' | 'failed' | 'absent';

/** One part of the server a deploy needs, as `slipway doctor` prints it. */
export interface ServerCheck {
  name: 'sandbox' | 'cgroups' | 'buildah' | 'registry' | 'edge' | 'node';
  /** `absent`: not used by this server's configuration (e.g. RUNTIME_ISOLATION=none, no REGISTRY_URL). */
  state: CheckState;
  /** What works or what does not, in words any member may read. */
  summary: string;
  /** The next step when it does not work (for the server's administrator). */
  fix: string | null;
  /** What the machine answered (error text, paths, versions): for site administrators only. */
  detail: string | null;
}

function withTimeout<T>(work: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${PROBE_TIMEOUT_MS / 1000} s`)), PROBE_TIMEOUT_MS);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

async function sandboxCheck(ctx: AppContext): Promise<ServerCheck> {
  const base = { name: 'sandbox' as const };
  if (ctx.config.RUNTIME === 'kubernetes')
    return { ...base, state: 'absent', summary: 'applications run on the cluster (RUNTIME=kubernetes)', fix: null, detail: null };
  const sandbox = createSandbox(ctx.config, ctx.db);
  if (!sandbox)
    return {
      ...base,
      state: 'absent',
      summary: 'off (RUNTIME_ISOLATION=none): builds and applications run unisolated, as root',
      fix: 'install bubblewrap, passt and util-linux, then unset RUNTIME_ISOLATION',
      detail: null,
    };
  try {
    // Runs bubblewrap as a throwaway user: proves user namespaces, setpriv and pasta, as every build and instance needs.
    await withTimeout(sandbox.ready(), 'the sandbox probe');
    return { ...base, state: 'ok', summary: 'bubblewrap starts sandboxes here', fix: null, detail: null };
  } catch (err) {
    return {
      ...base,
      state: 'failed',
      summary: 'builds and applications cannot start: the sandbox does not work on this server',
      fix:
        err instanceof SandboxUnavailable && /not installed/.test(err.message)
          ? 'apt-get install bubblewrap passt util-linux'
          : 'run the server as root on a kernel with unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1)',
      detail: message(err),
    };
  }
}

async function cgroupsCheck(ctx: AppContext): Promise<ServerCheck> {
  const base = { name: 'cgroups' as const };
  if (ctx.config.RUNTIME === 'kubernetes' || ctx.config.RUNTIME_ISOLATION === 'none')
    return { ...base, state: 'absent', summary: 'no local limits are applied by this server', fix: null, detail: null };
  const fix =
    'mount cgroup v2 with the memory, cpu and pids controllers delegated to the server (systemd: Delegate=yes in its unit; see docs/operations.md)';
  try {
    const hierarchy = await withTimeout(
      CgroupHierarchy.detect({ root: ctx.config.CGROUP_ROOT, version: ctx.config.CGROUP_VERSION }),
      'cgroups',
    );
    return hierarchy.version === 2
      ? { ...base, state: 'ok', summary: 'cgroup v2, memory, cpu and pids delegated: limits hold', fix: null, detail: null }
      : {
          ...base,
          state: 'ok',
          summary: 'cgroup v1: limits hold (v2 with delegation is preferred)',
          fix,
          detail: `v2 not usable at ${ctx.config.CGROUP_ROOT}`,
        };
  } catch (err) {
    return {
      ...base,
      state: 'failed',
      summary: 'memory, CPU and process limits cannot be applied: sandboxes refuse to start',
      fix,
      detail: message(err),
    };
  }
}

async function buildahCheck(): Promise<ServerCheck> {
  const base = { name: 'buildah' as const };
  const path = findOnPath('buildah');
  if (!path)
    return {
      ...base,
      state: 'failed',
      summary: 'apps with a Dockerfile cannot build (source builds still work)',
      fix: 'apt-get install buildah',
      detail: 'buildah is not on PATH',
    };
  try {
    const { stdout } = await withTimeout(exec(path, ['--version'], { timeout: PROBE_TIMEOUT_MS }), 'buildah');
    return { ...base, state: 'ok', summary: 'Dockerfile builds work', fix: null, detail: `${path}: ${stdout.trim()}` };
  } catch (err) {
    return {
      ...base,
      state: 'failed',
      summary: 'buildah is installed but does not run',
      fix: 'reinstall it: apt-get install --reinstall buildah',
      detail: message(err),
    };
  }
}

async function registryCheck(ctx: AppContext): Promise<ServerCheck> {
  const base = { name: 'registry' as const };
  const url = ctx.config.REGISTRY_URL;
  if (!url)
    return {
      ...base,
      state: ctx.config.RUNTIME === 'kubernetes' ? 'failed' : 'absent',
      summary:
        ctx.config.RUNTIME === 'kubernetes'
          ? 'no registry: the cluster has nowhere to pull images from'
          : 'none configured: images stay on this machine (enough for the local runtime)',
      fix:
        ctx.config.RUNTIME === 'kubernetes'
          ? 'set REGISTRY_URL to a registry the cluster pulls from (docs/operations.md, the registry)'
          : null,
      detail: null,
    };
  const address = /^https?:\/\//.test(url) ? url : `https://${url}`;
  // undici loads with the first check (a doctor run), not with every control plane.
  const { request } = await loadUndici();
  try {
    // The registry API's base answers 200, or 401 asking for a token (Slipway's): either way it is there.
    const res = await withTimeout(request(new URL('/v2/', address), { method: 'GET', headersTimeout: PROBE_TIMEOUT_MS }), 'the registry');
    await res.body.dump();
    const ok = res.statusCode === 200 || res.statusCode === 401;
    return {
      ...base,
      state: ok ? 'ok' : 'failed',
      summary: ok ? 'the registry answers' : `the registry answers ${res.statusCode} on /v2/`,
      fix: ok ? null : 'check REGISTRY_URL points at a Docker registry (distribution) and its token auth names this server',
      detail: `GET ${new URL('/v2/', address).href} → ${res.statusCode}`,
    };
  } catch (err) {
    return {
      ...base,
      state: 'failed',
      summary: 'the registry does not answer: pushes and cluster deploys fail',
      fix: 'start the registry or correct REGISTRY_URL',
      detail: `${address}: ${message(err)}`,
    };
  }
}

async function edgeCheck(ctx: AppContext): Promise<ServerCheck> {
  const base = { name: 'edge' as const };
  if (ctx.config.RUNTIME === 'kubernetes')
    return { ...base, state: 'absent', summary: "the cluster's ingress serves applications", fix: null, detail: null };
  if (ctx.config.EDGE_DRIVER === 'caddy') {
    const [{ request }, { caddyAdminEndpoint }] = await Promise.all([loadUndici(), import('../edge/caddy-admin.js')]);
    const endpoint = caddyAdminEndpoint(ctx.config.CADDY_ADMIN_URL);
    try {
      const res = await withTimeout(request(new URL('/config/', endpoint.base), { dispatcher: endpoint.dispatcher }), 'Caddy');
      await res.body.dump();
      const ok = res.statusCode === 200;
      return {
        ...base,
        state: ok ? 'ok' : 'failed',
        summary: ok ? 'Caddy serves applications' : `Caddy's admin API answers ${res.statusCode}`,
        fix: ok ? null : 'see Caddy’s log; the platform reloads its configuration when it answers',
        detail: `${ctx.config.CADDY_ADMIN_URL} → ${res.statusCode}`,
      };
    } catch (err) {
      return {
        ...base,
        state: 'failed',
        summary: 'Caddy does not answer: applications are not served',
        fix: 'start Caddy (systemctl start slipway-caddy) or correct CADDY_ADMIN_URL',
        detail: message(err),
      };
    } finally {
      await endpoint.dispatcher.close();
    }
  }
  const router = ctx.runtime?.router;
  if (!router)
    return { ...base, state: 'absent', summary: 'served by a separate edge process (not checked from here)', fix: null, detail: null };
  return router.listening
    ? { ...base, state: 'ok', summary: `the router serves applications on port ${ctx.config.ROUTER_PORT}`, fix: null, detail: null }
    : {
        ...base,
        state: 'failed',
        summary: 'the router is not listening: applications are not served',
        fix: `free port ${ctx.config.ROUTER_PORT} (ROUTER_PORT) and restart the server`,
        detail: null,
      };
}

async function nodeCheck(ctx: AppContext, folders: string[]): Promise<ServerCheck> {
  const sandboxed = ctx.config.RUNTIME_ISOLATION !== 'none';
  const nodes = await installedNodes(folders, sandboxed);
  return nodes.length > 0
    ? {
        name: 'node',
        state: 'ok',
        summary: `source builds offer Node ${nodes.map((n) => n.version).join(', ')} (package.json "engines.node" picks one)`,
        fix: null,
        detail: nodes.map((n) => n.executable).join(', '),
      }
    : {
        name: 'node',
        state: 'failed',
        summary: 'no Node for source builds: Node apps cannot build',
        fix: `apt-get install nodejs, or unpack one from nodejs.org as ${folders[0] ?? '/opt/node'}/<version>/bin/node (BUILD_NODE_DIRS)`,
        detail: null,
      };
}

/** Node versions source builds may use here, for `engines.node` (also in the `node` check). */
export async function buildNodeVersions(ctx: AppContext): Promise<string[]> {
  return (await installedNodes(nodeFolders(ctx), ctx.config.RUNTIME_ISOLATION !== 'none')).map((n) => n.version);
}

function nodeFolders(ctx: AppContext): string[] {
  return ctx.config.BUILD_NODE_DIRS.split(':').filter(Boolean);
}

/** Every check at once (each bounded by its own timeout). */
export async function serverChecks(ctx: AppContext): Promise<ServerCheck[]> {
  return Promise.all([
    sandboxCheck(ctx),
    cgroupsCheck(ctx),
    buildahCheck(),
    registryCheck(ctx),
    edgeCheck(ctx),
    nodeCheck(ctx, nodeFolders(ctx)),
  ]);
}
