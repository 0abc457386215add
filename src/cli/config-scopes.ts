import { readFileSync } from 'node:fs';
import { importDotenvAsEntries, type ImportOutcome } from '../modules/configurations/dotenv-import.js';
import { ok, type Schemas } from './api.js';
import type { Context } from './context.js';
import { usage } from './errors.js';

export type Variable = Schemas['ConfigVariable'];
export interface NewVariable {
  name: string;
  value: string;
  secret?: boolean;
  buildtime?: boolean;
}
export interface VariableChange {
  value?: string;
  secret?: boolean;
  buildtime?: boolean;
}
export type { ImportOutcome };

/** One configuration layer, whichever routes serve it. */
export interface Scope {
  label: string;
  list(): Promise<Variable[]>;
  create(body: NewVariable): Promise<Variable>;
  update(id: string, body: VariableChange): Promise<Variable>;
  remove(id: string): Promise<void>;
  importDotenv(text: string, flags: { secret?: boolean; buildtime?: boolean }): Promise<ImportOutcome[]>;
}

export const SCOPES = ['app', 'env', 'project', 'team', 'workspace'] as const;
export type ScopeName = (typeof SCOPES)[number];

/**
 * The five layers (workspace → team → project → environment → application, the lower one
 * winning), addressed from the linked application: its organization, project and --env.
 */
export async function scopeOf(ctx: Context, name: string, team?: string): Promise<Scope> {
  if (!(SCOPES as readonly string[]).includes(name)) throw usage(`--scope must be one of ${SCOPES.join(', ')}`);
  if (name === 'app') return appScope(ctx, (await ctx.app()).id);
  ctx.requireKey();
  const [workspace, project] = ctx.appName().split('/') as [string, string];
  const api = ctx.api;
  if (name === 'workspace') {
    const path = { workspace };
    return layered(`workspace ${workspace}`, {
      list: () => ok(api.GET('/v1/workspaces/{workspace}/config', { params: { path } })),
      create: (body) => ok(api.POST('/v1/workspaces/{workspace}/config', { params: { path }, body })),
      update: (id, body) =>
        ok(api.PATCH('/v1/workspaces/{workspace}/config/{config_id}', { params: { path: { ...path, config_id: id } }, body })),
      remove: async (id) => {
        await ok(api.DELETE('/v1/workspaces/{workspace}/config/{config_id}', { params: { path: { ...path, config_id: id } } }));
      },
      bulk: (body) => entryOutcomes(ok(api.POST('/v1/workspaces/{workspace}/config/bulk', { params: { path }, body }))),
    });
  }
  if (name === 'team') {
    if (!team) throw usage('--scope team needs --team <team>');
    const path = { workspace, team };
    return layered(`team ${workspace}/${team}`, {
      list: () => ok(api.GET('/v1/workspaces/{workspace}/teams/{team}/config', { params: { path } })),
      create: (body) => ok(api.POST('/v1/workspaces/{workspace}/teams/{team}/config', { params: { path }, body })),
      update: (id, body) =>
        ok(api.PATCH('/v1/workspaces/{workspace}/teams/{team}/config/{config_id}', { params: { path: { ...path, config_id: id } }, body })),
      remove: async (id) => {
        await ok(
          api.DELETE('/v1/workspaces/{workspace}/teams/{team}/config/{config_id}', { params: { path: { ...path, config_id: id } } }),
        );
      },
      bulk: (body) => entryOutcomes(ok(api.POST('/v1/workspaces/{workspace}/teams/{team}/config/bulk', { params: { path }, body }))),
    });
  }
  if (name === 'project') {
    const path = { workspace, project };
    return layered(`project ${workspace}/${project}`, {
      list: () => ok(api.GET('/v1/workspaces/{workspace}/projects/{project}/config', { params: { path } })),
      create: (body) => ok(api.POST('/v1/workspaces/{workspace}/projects/{project}/config', { params: { path }, body })),
      update: (id, body) =>
        ok(
          api.PATCH('/v1/workspaces/{workspace}/projects/{project}/config/{config_id}', {
            params: { path: { ...path, config_id: id } },
            body,
          }),
        ),
      remove: async (id) => {
        await ok(
          api.DELETE('/v1/workspaces/{workspace}/projects/{project}/config/{config_id}', { params: { path: { ...path, config_id: id } } }),
        );
      },
      bulk: (body) => entryOutcomes(ok(api.POST('/v1/workspaces/{workspace}/projects/{project}/config/bulk', { params: { path }, body }))),
    });
  }
  const path = { workspace, project, env: ctx.envName() };
  return layered(`environment ${path.env} of ${workspace}/${project}`, {
    list: () => ok(api.GET('/v1/workspaces/{workspace}/projects/{project}/envs/{env}/config', { params: { path } })),
    create: (body) => ok(api.POST('/v1/workspaces/{workspace}/projects/{project}/envs/{env}/config', { params: { path }, body })),
    update: (id, body) =>
      ok(
        api.PATCH('/v1/workspaces/{workspace}/projects/{project}/envs/{env}/config/{config_id}', {
          params: { path: { ...path, config_id: id } },
          body,
        }),
      ),
    remove: async (id) => {
      await ok(
        api.DELETE('/v1/workspaces/{workspace}/projects/{project}/envs/{env}/config/{config_id}', {
          params: { path: { ...path, config_id: id } },
        }),
      );
    },
    bulk: (body) =>
      entryOutcomes(ok(api.POST('/v1/workspaces/{workspace}/projects/{project}/envs/{env}/config/bulk', { params: { path }, body }))),
  });
}

function appScope(ctx: Context, applicationId: string): Scope {
  const api = ctx.api;
  const path = { application_id: applicationId };
  return {
    label: `application ${ctx.appName()}`,
    list: () => ok(api.GET('/v1/configurations/{application_id}', { params: { path } })),
    create: (body) => ok(api.POST('/v1/configurations/{application_id}', { params: { path }, body })),
    update: (id, body) =>
      ok(api.PATCH('/v1/configurations/{application_id}/{config_id}', { params: { path: { ...path, config_id: id } }, body })),
    remove: async (id) => {
      await ok(api.DELETE('/v1/configurations/{application_id}/{config_id}', { params: { path: { ...path, config_id: id } } }));
    },
    // The application layer takes the dotenv text itself (the server parses it).
    async importDotenv(text, flags) {
      const r = await ok(api.POST('/v1/configurations/{application_id}/bulk', { params: { path }, body: { raw: text, ...flags } }));
      return [
        ...r.created.map((name) => ({ name, result: 'created' as const })),
        ...r.updated.map((name) => ({ name, result: 'updated' as const })),
        ...r.skipped.map((name) => ({ name, result: 'skipped' as const, message: 'existing secret, left as it was (set it on its own)' })),
        ...r.errors.map((e) => ({ name: e.name, result: 'error' as const, message: e.message })),
      ];
    },
  };
}

/**
 * The outcomes of a bulk of entries: one per entry. (The same route answers Ancla's object form,
 * dotenv text, with names by outcome; this CLI sends entries, so a list is what comes back.)
 */
async function entryOutcomes(answer: Promise<unknown>): Promise<ImportOutcome[]> {
  const outcomes = await answer;
  if (!Array.isArray(outcomes)) throw new Error('the server answered a bulk of entries without a list of outcomes');
  return outcomes as ImportOutcome[];
}

type LayerRoutes = Omit<Scope, 'label' | 'importDotenv'> & { bulk(body: NewVariable[]): Promise<ImportOutcome[]> };

/** The other layers take entries: the dotenv text is parsed here, with the server's own parser. */
function layered(label: string, routes: LayerRoutes): Scope {
  return {
    label,
    list: routes.list,
    create: routes.create,
    update: routes.update,
    remove: routes.remove,
    importDotenv: (text, flags) => importDotenvAsEntries(text, flags, routes.bulk),
  };
}

/** A dotenv file, or standard input for `-`. */
export function readDotenvFile(path: string, stdin: () => Promise<string>): Promise<string> {
  if (path === '-') return stdin();
  try {
    return Promise.resolve(readFileSync(path, 'utf8'));
  } catch (err) {
    throw usage(`Cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}
