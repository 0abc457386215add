import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import semver from 'semver';
import { Context, type AppDetail } from '../context.js';
import { CliError } from '../errors.js';
import { localRepositoryDir } from '../local-source.js';

interface Check {
  name: string;
  ok: boolean;
  /** What was found, or what is wrong and how to fix it. */
  detail: string;
}

/** What `GET /v1/integrations/doctor` answers (see src/modules/health/doctor.routes.ts). */
interface ServerDiagnosis {
  checks: Array<{ name: string; state: 'ok' | 'failed' | 'absent'; summary: string; fix: string | null; detail: string | null }>;
  node_versions: string[];
}

/**
 * `slipway doctor`: the server (reachable, logged in, each component of its health check, its
 * disk) and the application in this directory (git state, start command, port, engines.node),
 * each as ✓ or ✗ with what to do. Exits 1 when something needs fixing.
 */
export function doctorCommand(program: Command) {
  program
    .command('doctor')
    .description('Check the server and the application in this directory, and say what to fix')
    .action(async (_o, command: Command) => {
      const ctx = Context.of(command);
      const server = await serverChecks(ctx);
      const checks = [...server.checks, ...directoryChecks(ctx.cwd, await linkedApp(ctx), server.nodeVersions)];
      if (ctx.out.json) ctx.out.stdout.write(`${JSON.stringify(checks)}\n`);
      else
        for (const c of checks)
          ctx.out.stdout.write(
            `${c.ok ? ctx.out.colors.green('✓') : ctx.out.colors.red('✗')} ${ctx.out.colors.bold(c.name)}: ${c.detail}\n`,
          );
      const failed = checks.filter((c) => !c.ok).length;
      if (failed > 0) process.exitCode = 1;
      if (!ctx.out.json) ctx.out.note(failed ? `${failed} to fix (above).` : 'Nothing to fix.');
    });
}

async function linkedApp(ctx: Context): Promise<AppDetail | null> {
  try {
    return await ctx.app();
  } catch {
    return null;
  }
}

async function serverChecks(ctx: Context): Promise<{ checks: Check[]; nodeVersions: string[] | null }> {
  const server = ctx.settings.server;
  let health: { status: string; disk: string; components: Record<string, string> };
  try {
    const response = await fetch(`${server}/v1/integrations/health`);
    health = (await response.json()) as typeof health;
  } catch (err) {
    return {
      checks: [
        {
          name: 'server',
          ok: false,
          detail: `no answer from ${server} (${(err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message}): start it (npm start) or set --server / SLIPWAY_SERVER`,
        },
      ],
      nodeVersions: null,
    };
  }
  const checks: Check[] = [{ name: 'server', ok: true, detail: `${server} answers` }];
  const fixes: Record<string, string> = {
    database: 'the server cannot reach PostgreSQL: check DATABASE_URL and that PostgreSQL runs (see the server log)',
    job_store: 'pipeline jobs cannot be queued (the job store lives in PostgreSQL): see the server log',
    runtime: 'applications cannot run: see the server log for the sandbox (bubblewrap, passt, cgroups) it refused',
    edge: 'the router serving applications is down: check ROUTER_PORT is free and see the server log',
  };
  for (const [component, state] of Object.entries(health.components ?? {})) {
    if (state === 'absent') continue;
    checks.push({ name: component.replace('_', ' '), ok: state === 'ok', detail: state === 'ok' ? 'ok' : (fixes[component] ?? state) });
  }
  checks.push({
    name: 'disk',
    ok: health.disk === 'ok' || health.disk === 'unknown',
    detail:
      health.disk === 'ok' ? 'enough free space in DATA_DIR' : `DATA_DIR is ${health.disk}: free space (old images: npm run admin -- gc)`,
  });
  if (!ctx.settings.apiKey) {
    checks.push({ name: 'login', ok: false, detail: 'not logged in: slipway login (then the server checks its sandbox, builds and edge)' });
    return { checks, nodeVersions: null };
  }
  const me = await ctx.api.GET('/v1/auth/session').catch(() => null);
  if (!me?.response.ok || !me.data?.user) {
    checks.push({ name: 'login', ok: false, detail: 'the stored API key is refused: slipway login' });
    return { checks, nodeVersions: null };
  }
  checks.push({ name: 'login', ok: true, detail: 'the stored API key works' });
  const diagnosis = await machineChecks(ctx);
  if (!diagnosis) {
    checks.push({ name: 'server checks', ok: false, detail: 'this server does not report its own checks: upgrade it' });
    return { checks, nodeVersions: null };
  }
  for (const c of diagnosis.checks) {
    const said = [c.summary, c.state === 'ok' || !c.fix ? null : `fix: ${c.fix}`, c.detail ? `(${c.detail})` : null];
    checks.push({ name: c.name, ok: c.state !== 'failed', detail: said.filter(Boolean).join('; ') });
  }
  return { checks, nodeVersions: diagnosis.node_versions };
}

/** The server's checks of its own machine (sandbox, cgroups, buildah, registry, edge, Node); null from an older server. */
async function machineChecks(ctx: Context): Promise<ServerDiagnosis | null> {
  const response = await fetch(`${ctx.settings.server}/v1/integrations/doctor`, { headers: { 'x-api-key': ctx.settings.apiKey! } }).catch(
    () => null,
  );
  if (!response?.ok) return null;
  return (await response.json()) as ServerDiagnosis;
}

function git(dir: string, args: string[]) {
  const r = spawnSync('git', ['-C', dir, ...args], { encoding: 'utf8' });
  return { code: r.status ?? 1, stdout: (r.stdout ?? '').trim() };
}

/** The application in `dir` (or in the linked application's local repository). */
function directoryChecks(cwd: string, app: AppDetail | null, nodeVersions: string[] | null): Check[] {
  const dir = (app && localRepositoryDir(app)) ?? cwd;
  const checks: Check[] = [];
  checks.push(
    app
      ? { name: 'application', ok: true, detail: `${app.organization_slug}/${app.project_slug}/${app.slug} (linked)` }
      : {
          name: 'application',
          ok: false,
          detail: 'none linked here: slipway apps link <org/project/app> (or slipway apps create … --link)',
        },
  );
  if (git(dir, ['rev-parse', '--git-dir']).code !== 0) {
    checks.push({
      name: 'git',
      ok: false,
      detail: `${dir} is not a git repository: git init -b main && git add -A && git commit -m "First deploy"`,
    });
  } else {
    const branch = git(dir, ['rev-parse', '--abbrev-ref', 'HEAD']).stdout;
    const changes = git(dir, ['status', '--porcelain']).stdout.split('\n').filter(Boolean).length;
    const wanted = app?.auto_deploy_branch;
    checks.push({
      name: 'git',
      ok: changes === 0 && (!wanted || wanted === branch),
      detail:
        changes > 0
          ? `${changes} change(s) not committed are not deployed: git add -A && git commit, or slipway deploy --include-uncommitted`
          : wanted && wanted !== branch
            ? `on branch ${branch}, but deploys build ${wanted}: git checkout ${wanted}, or slipway deploy --ref ${branch}`
            : `clean, on ${branch}`,
    });
  }
  const procfile = readText(join(dir, 'Procfile'));
  const pkg = parseJson(readText(join(dir, 'package.json')));
  const web = procfile ? /^web:\s*(.+)$/m.exec(procfile)?.[1] : undefined;
  const start = pkg?.scripts?.start;
  const hasDockerfile = existsSync(join(dir, 'Dockerfile'));
  checks.push(
    web || start || hasDockerfile
      ? { name: 'start command', ok: true, detail: web ? `Procfile web: ${web}` : start ? `npm start: ${start}` : 'Dockerfile' }
      : {
          name: 'start command',
          ok: false,
          detail: "nothing says how to start it: add a Procfile (printf 'web: node server.js\\n' > Procfile)",
        },
  );
  const entry = web?.match(/\bnode\s+(\S+\.[cm]?js)\b/)?.[1] ?? pkg?.main;
  const source = entry ? readText(join(dir, entry)) : null;
  if (source && /\.listen\(/.test(source)) {
    const usesPort = /process\.env\.PORT|process\.env\[['"]PORT['"]\]/.test(source);
    checks.push({
      name: 'port',
      ok: usesPort,
      detail: usesPort
        ? `${entry} listens on PORT`
        : `${entry} does not read PORT: listen on process.env.PORT (the platform gives each instance its own), or its health check never answers`,
    });
  }
  const engines = pkg?.engines?.node;
  if (typeof engines === 'string') checks.push(enginesCheck(engines, nodeVersions));
  return checks;
}

/** Whether a Node the server builds with satisfies `engines.node` (as its source builds choose one). */
function enginesCheck(range: string, nodeVersions: string[] | null): Check {
  if (semver.validRange(range) === null)
    return { name: 'engines.node', ok: false, detail: `"${range}" is not a version range: write e.g. ">=20" or "20.x"` };
  if (!nodeVersions)
    return { name: 'engines.node', ok: true, detail: `"${range}" (log in to check it against the server's Node versions)` };
  const chosen = semver.maxSatisfying(nodeVersions, range);
  return chosen
    ? { name: 'engines.node', ok: true, detail: `"${range}": builds use Node ${chosen}` }
    : {
        name: 'engines.node',
        ok: false,
        detail: `"${range}" matches no Node on the server (${nodeVersions.join(', ') || 'none'}): widen the range, build with a Dockerfile (FROM node:<version>), or ask the administrator to install one (BUILD_NODE_DIRS)`,
      };
}

function readText(path: string): string | null {
  try {
    return readFileSync(path, 'utf8').slice(0, 256 * 1024);
  } catch {
    return null;
  }
}

function parseJson(text: string | null): { scripts?: { start?: string }; main?: string; engines?: { node?: unknown } } | null {
  if (!text) return null;
  try {
    return JSON.parse(text) as ReturnType<typeof parseJson>;
  } catch {
    throw new CliError('package.json is not valid JSON: fix it (npm install would refuse it too)');
  }
}
