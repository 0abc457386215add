import { readFileSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { confirm } from '@inquirer/prompts';
import type { Command } from 'commander';
import { parseDocument } from 'yaml';
import { ok } from '../api.js';
import { Context } from '../context.js';
import { CliError, EXIT, usage } from '../errors.js';

/** As the server bounds it (src/modules/compose/compose-file.ts): refused here before reading more. */
const MAX_COMPOSE_BYTES = 256 * 1024;
const MAX_ENV_FILE_BYTES = 64 * 1024;

interface PlanItem {
  service: string;
  resource: string;
  action: 'create' | 'update' | 'unchanged';
  detail: string;
}
interface Plan {
  project: { id: string; slug: string; organization_slug: string };
  environment: string;
  order: string[];
  items: PlanItem[];
  unmapped: Array<{ service: string | null; key: string; line: number; reason: string }>;
  changes: number;
  deployments?: Array<{ service: string; application_id: string; image_id: string }>;
}

/** The routes are not in the generated client types until `npm run client:types` runs after the merge. */
type Untyped = { POST(path: string, init: object): Promise<{ data?: unknown; error?: unknown; response: Response }> };

export function composeCommands(program: Command) {
  const compose = program.command('compose').description('Docker Compose files: import their services as applications and add-ons');
  compose
    .command('import')
    .description('Create or update a project’s applications and add-ons from a Compose file: shows the plan, asks, then applies')
    .argument('<file>', 'the Compose file (compose.yaml)')
    .option('--project <org/project>', 'the project to import into (default: the linked application’s)')
    .option('--yes', 'apply without asking')
    .option('--plan-only', 'show the plan and change nothing')
    .action(async (file: string, o: { project?: string; yes?: boolean; planOnly?: boolean }, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      const path = resolve(ctx.cwd, file);
      const text = readBounded(path, MAX_COMPOSE_BYTES, 'the Compose file');
      const body = {
        compose: text,
        base_dir: dirname(path),
        environment: ctx.envName(),
        env_files: readEnvFiles(text, dirname(path)),
      };
      const projectId = await projectIdOf(ctx, o.project);
      const api = ctx.api as unknown as Untyped;
      const call = (step: 'plan' | 'apply') =>
        ok(api.POST(`/v1/projects/{project_id}/compose/${step}`, { params: { path: { project_id: projectId } }, body })) as Promise<Plan>;
      const plan = await call('plan');
      if (o.planOnly || plan.changes === 0) {
        return ctx.out.result(plan, () => [...describe(plan), plan.changes === 0 ? 'Nothing to change.' : '']);
      }
      if (!o.yes) {
        for (const line of describe(plan)) ctx.out.stderr.write(`${line}\n`);
        if (!process.stdin.isTTY) throw new CliError('Not a terminal: pass --yes to apply without confirmation', EXIT.usage);
        if (!(await confirm({ message: `Apply these ${plan.changes} changes?`, default: false }, { output: process.stderr })))
          throw new CliError('Nothing was changed', EXIT.usage);
      }
      const applied = await call('apply');
      ctx.out.result(applied, () => [
        ...(o.yes ? describe(applied) : []),
        ...(applied.deployments ?? []).map((d) => `Deploying ${d.service} (image ${d.image_id}): \`slipway status\` shows how it goes`),
        `Imported into ${applied.project.organization_slug}/${applied.project.slug}.`,
      ]);
    });
}

function describe(plan: Plan): string[] {
  const mark = { create: '+', update: '~', unchanged: '=' } as const;
  const lines = [
    `Plan for ${plan.project.organization_slug}/${plan.project.slug} (${plan.environment}), in order: ${plan.order.join(', ')}`,
  ];
  for (const i of plan.items)
    lines.push(`  ${mark[i.action]} ${i.service}: ${i.resource} ${i.detail}${i.action === 'unchanged' ? ' (unchanged)' : ''}`);
  if (plan.unmapped.length > 0) {
    lines.push('Not imported:');
    for (const u of plan.unmapped) lines.push(`  ! ${u.service ? `${u.service}.` : ''}${u.key} (line ${u.line}): ${u.reason}`);
  }
  return lines;
}

function readBounded(path: string, max: number, what: string): string {
  let size: number;
  try {
    size = statSync(path).size;
  } catch {
    throw usage(`${what} ${path} cannot be read`);
  }
  if (size > max) throw usage(`${what} ${path} is larger than ${max} bytes`);
  return readFileSync(path, 'utf8');
}

/** The env files the services name, read here (the server never reads the member's files). */
function readEnvFiles(text: string, baseDir: string): Record<string, string> {
  const doc = parseDocument(text);
  if (doc.errors.length > 0) return {}; // the server answers with the line
  const services = (doc.toJS({ maxAliasCount: 100 }) as { services?: Record<string, { env_file?: unknown }> } | null)?.services ?? {};
  const files: Record<string, string> = {};
  for (const service of Object.values(services)) {
    const raw = service?.env_file;
    const paths = (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]).map((p) =>
      typeof p === 'object' && p !== null ? (p as { path?: unknown }).path : p,
    );
    for (const p of paths) if (typeof p === 'string') files[p] = readBounded(resolve(baseDir, p), MAX_ENV_FILE_BYTES, 'the env file');
  }
  return files;
}

/** `org/project` from --project, else the linked application's project. */
async function projectIdOf(ctx: Context, given: string | undefined): Promise<string> {
  const name = given ?? ctx.appName().split('/').slice(0, 2).join('/');
  const [org, project, extra] = name.split('/');
  if (!org || !project || extra !== undefined) throw usage(`Project '${name}' must be written org/project`);
  const found = await ok(
    ctx.api.GET('/v1/projects/{org_slug}/{project_slug}', { params: { path: { org_slug: org, project_slug: project } } }),
  );
  return found.id;
}
