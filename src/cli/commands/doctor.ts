import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { Context, type AppDetail } from '../context.js';
import { CliError } from '../errors.js';
import { localRepositoryDir } from '../local-source.js';

interface Check {
  name: string;
  ok: boolean;
  /** What was found, or what is wrong and how to fix it. */
  detail: string;
}

/** Node majors the platform builds with (the server's engines range). */
const PLATFORM_NODE_MAJOR = 20;

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
      const checks = [...(await serverChecks(ctx)), ...directoryChecks(ctx.cwd, await linkedApp(ctx))];
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

async function serverChecks(ctx: Context): Promise<Check[]> {
  const server = ctx.settings.server;
  let health: { status: string; disk: string; components: Record<string, string> };
  try {
    const response = await fetch(`${server}/v1/integrations/health`);
    health = (await response.json()) as typeof health;
  } catch (err) {
    return [
      {
        name: 'server',
        ok: false,
        detail: `no answer from ${server} (${(err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message}): start it (npm start) or set --server / SLIPWAY_SERVER`,
      },
    ];
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
  if (!ctx.settings.apiKey) checks.push({ name: 'login', ok: false, detail: 'not logged in: slipway login' });
  else {
    const me = await ctx.api.GET('/v1/auth/session').catch(() => null);
    checks.push(
      me?.response.ok && me.data?.user
        ? { name: 'login', ok: true, detail: 'the stored API key works' }
        : { name: 'login', ok: false, detail: 'the stored API key is refused: slipway login' },
    );
  }
  return checks;
}

function git(dir: string, args: string[]) {
  const r = spawnSync('git', ['-C', dir, ...args], { encoding: 'utf8' });
  return { code: r.status ?? 1, stdout: (r.stdout ?? '').trim() };
}

/** The application in `dir` (or in the linked application's local repository). */
function directoryChecks(cwd: string, app: AppDetail | null): Check[] {
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
  if (typeof engines === 'string') {
    const minimum = Number(/>=?\s*v?(\d+)/.exec(engines)?.[1] ?? /^\^?~?v?(\d+)/.exec(engines.trim())?.[1] ?? 0);
    checks.push({
      name: 'engines.node',
      ok: minimum <= PLATFORM_NODE_MAJOR,
      detail:
        minimum <= PLATFORM_NODE_MAJOR
          ? `"${engines}"`
          : `"${engines}" asks for Node ${minimum}+, and builds here run Node ${PLATFORM_NODE_MAJOR}: lower the range, or build with a Dockerfile (FROM node:${minimum})`,
    });
  }
  return checks;
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
