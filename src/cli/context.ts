import type { Command } from 'commander';
import { createApi, ok, type Api } from './api.js';
import { ApiError, CliError, EXIT, usage } from './errors.js';
import { Output } from './output.js';
import { findLink, readSettings, resolveSettings, settingsPath, type ResolvedSettings } from './settings.js';

/** The options every command accepts (declared on the program). */
export interface GlobalOptions {
  server?: string;
  apiKey?: string;
  json?: boolean;
  app?: string;
  env?: string;
}

/** What a command runs with: the resolved settings, the typed API client, the output. */
export class Context {
  readonly out: Output;
  readonly settings: ResolvedSettings;
  readonly settingsFile: string;
  readonly api: Api;

  /** The context of the running command (for error messages that name where the key came from). */
  static current: Context | undefined;

  constructor(
    readonly options: GlobalOptions,
    readonly env: NodeJS.ProcessEnv = process.env,
    readonly cwd = process.cwd(),
  ) {
    Context.current = this;
    this.out = new Output(Boolean(options.json), env);
    this.settingsFile = settingsPath(env);
    this.settings = resolveSettings({ server: options.server, apiKey: options.apiKey }, env, readSettings(this.settingsFile));
    this.api = createApi(this.settings.server, this.settings.apiKey);
  }

  static of(command: Command): Context {
    return new Context(command.optsWithGlobals<GlobalOptions>());
  }

  /** Fails early, with a hint, when no API key is configured anywhere. */
  requireKey() {
    if (!this.settings.apiKey) throw new CliError('Not logged in: run `slipway login`, or set SLIPWAY_API_KEY or --api-key', EXIT.auth);
  }

  /** `org/project/app` from --app, SLIPWAY_APP or the directory's link. */
  appName(): string {
    const name = this.options.app ?? this.env.SLIPWAY_APP ?? findLink(readSettings(this.settingsFile), this.cwd)?.name;
    if (!name)
      throw usage('No application: pass --app <org/project/app>, set SLIPWAY_APP, or run `slipway apps link <org/project/app>` here');
    return name;
  }

  /** The application the command is about, as the API describes it. */
  async app() {
    this.requireKey();
    const [org, project, app, extra] = this.appName().split('/');
    if (!org || !project || !app || extra !== undefined) throw usage(`Application '${this.appName()}' must be written org/project/app`);
    try {
      return await ok(
        this.api.GET('/v1/applications/{org_slug}/{project_slug}/{app_slug}', {
          params: { path: { org_slug: org, project_slug: project, app_slug: app } },
        }),
      );
    } catch (err) {
      if (err instanceof ApiError && err.status === 404)
        throw new ApiError(404, `Application ${org}/${project}/${app} not found (or you are not a member of ${org})`);
      throw err;
    }
  }

  /** The environment a command targets: --env, SLIPWAY_ENV, else production. */
  envName(): string {
    return this.options.env ?? this.env.SLIPWAY_ENV ?? 'production';
  }
}

export type AppDetail = Awaited<ReturnType<Context['app']>>;
