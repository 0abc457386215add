import { conflict, invalid } from '../../platform/errors.js';
import type { ApplicationsService } from '../applications/index.js';
import type { AddonsService } from '../addons/index.js';
import { parseDotenv, type ConfigurationsService } from '../configurations/index.js';
import type { ProjectsService } from '../projects/index.js';
import type { VolumesService } from '../volumes/index.js';
import { mountPathProblem } from '../../platform/volumes/index.js';
import { creationOrder, parseComposeFile, type ComposeService as ServiceOfFile, type NamedMount, type Unmapped } from './compose-file.js';
import type { Config } from '../../config.js';
import { addonKindOf, addonNameFor, applicationSlugFor, contextPath, vetImage, wireEnvironment, type AddonKind } from './compose-plan.js';
import type { ComposeImportsRepository } from './compose-imports.repository.js';

export interface ComposeRequest {
  compose: string;
  base_dir?: string | undefined;
  environment?: string | undefined;
  /** The env files the file names, read by the client: path (as written in the file) → dotenv text. */
  env_files?: Record<string, string> | undefined;
}

export type PlanAction = 'create' | 'update' | 'unchanged';
export interface PlanItem {
  service: string;
  resource: 'addon' | 'application' | 'source' | 'settings' | 'variables' | 'attachment' | 'scale' | 'volume' | 'deploy';
  action: PlanAction;
  detail: string;
}

/** Starts a build-and-deploy (the configured source) or an image deploy; supplied by the composition root. */
export interface ComposeDeployer {
  build(userId: string, applicationId: string): Promise<{ image_id: string }>;
  image(userId: string, applicationId: string, body: { image: string; environment?: string }): Promise<{ image_id: string }>;
}

interface AddonStep {
  service: ServiceOfFile;
  kind: AddonKind;
  name: string;
  existingId: string | null;
}
interface AppStep {
  service: ServiceOfFile;
  slug: string;
  existingId: string | null;
  source: { repository: string } | { image: string };
  /** An image service whose image differs from the one last deployed by an import. */
  imageChanged: boolean;
  settings: { github_repository?: string; health_check_path?: string; health_check_timeout?: number; start_command?: string };
  settingsChanged: string[];
  variables: Array<{ name: string; value: string; secret: boolean }>;
  variablesChanged: string[];
  attachments: Array<{ addon: string; as: string | undefined; present: boolean }>;
  replicas: number | null;
  scaleChanged: boolean;
  volumes: Array<NamedMount & { sizeMiB: number; defaulted: boolean; present: boolean }>;
}
interface Plan {
  project: { id: string; slug: string; organization_slug: string };
  environment: string;
  order: string[];
  addons: AddonStep[];
  apps: AppStep[];
  items: PlanItem[];
  unmapped: Unmapped[];
}

const MAX_ENV_FILE_BYTES = 64 * 1024;
/** A named volume's size when the file gives none (`x-slipway-size`). */
export const DEFAULT_VOLUME_MIB = 1024;

/**
 * `slipway compose import`: a Compose file's services become applications and add-ons of a
 * project. The plan says what would be created, updated or left unchanged and what is not
 * mapped (with reasons); apply does it, recording which service became what so that importing
 * the same file again updates instead of creating copies.
 */
export class ComposeService {
  constructor(
    private readonly config: Config,
    private readonly imports: ComposeImportsRepository,
    private readonly projects: ProjectsService,
    private readonly apps: ApplicationsService,
    private readonly configs: ConfigurationsService,
    private readonly addons: AddonsService,
    private readonly volumes: VolumesService,
    private readonly deployer: ComposeDeployer,
    /** Refuses (422) a repository the user may not build from (the source rules), before anything is created. */
    private readonly vetSource: (userId: string, repository: string) => Promise<unknown> = async () => {},
  ) {}

  async plan(userId: string, projectId: string, request: ComposeRequest) {
    return view(await this.makePlan(userId, projectId, request));
  }

  async apply(userId: string, projectId: string, request: ComposeRequest) {
    const plan = await this.makePlan(userId, projectId, request);
    const org = plan.project.organization_slug;
    // The refusals a write further down would meet, met before the first: a refused import creates nothing.
    if (plan.addons.some((step) => !step.existingId)) await this.addons.requireCreator(userId, org);
    for (const step of plan.apps) if (step.settings.github_repository) await this.vetSource(userId, step.settings.github_repository);
    const addonIds = new Map<string, string>();
    for (const step of plan.addons) {
      if (step.existingId) {
        addonIds.set(step.service.name, step.existingId);
        continue;
      }
      const created = await this.addons.create(userId, org, { name: step.name, kind: step.kind });
      await this.imports.record(plan.project.id, step.service.name, { addonId: created.id });
      addonIds.set(step.service.name, created.id);
    }
    const deployments: Array<{ service: string; application_id: string; image_id: string }> = [];
    for (const step of plan.apps) {
      let appId = step.existingId;
      if (!appId) {
        appId = (await this.apps.create(userId, { name: step.service.name, slug: step.slug, project_id: plan.project.id })).id;
        await this.imports.record(plan.project.id, step.service.name, { applicationId: appId });
      }
      if (step.settingsChanged.length > 0) await this.apps.updateSettings(userId, appId, step.settings);
      if (step.variablesChanged.length > 0) {
        const scope = { scope: 'application' as const, scopeId: appId };
        const changed = step.variables.filter((v) => step.variablesChanged.includes(v.name));
        await this.configs.authorizeWrite(
          userId,
          scope,
          changed.map((v) => ({ name: v.name, secret: v.secret })),
        );
        for (const secret of [true, false]) {
          const batch = changed.filter((v) => v.secret === secret);
          if (batch.length === 0) continue;
          await this.replaceVariables(scope, batch, secret);
        }
      }
      for (const a of step.attachments) {
        if (a.present) continue;
        const addon = plan.addons.find((x) => x.service.name === a.addon)!;
        await this.addons.attach(userId, org, addon.name, { application_id: appId, environment: plan.environment, as: a.as });
      }
      if (step.scaleChanged) await this.apps.scale(userId, appId, { process_counts: { web: step.replicas! } });
      // Before the deploy, so that a new application's first deploy mounts it (an existing one is redeployed by the volume).
      for (const v of step.volumes)
        if (!v.present)
          await this.volumes.create(userId, appId, {
            name: v.name,
            mount_path: v.path,
            size_mib: v.sizeMiB,
            environment: plan.environment,
          });
      if (needsDeploy(step)) {
        const started =
          'image' in step.source
            ? await this.deployer.image(userId, appId, { image: step.source.image, environment: plan.environment })
            : await this.deployer.build(userId, appId);
        if ('image' in step.source)
          await this.imports.record(plan.project.id, step.service.name, { applicationId: appId, image: step.source.image });
        deployments.push({ service: step.service.name, application_id: appId, image_id: started.image_id });
      }
    }
    return { ...view(plan), deployments };
  }

  /** Bulk writes skip existing secrets: a changed secret is replaced (delete, then create). */
  private async replaceVariables(
    scope: { scope: 'application'; scopeId: string },
    batch: Array<{ name: string; value: string }>,
    secret: boolean,
  ) {
    if (secret) {
      const existing = await this.configs.list(scope);
      for (const v of batch) {
        const old = existing.find((e) => e.name.toLowerCase() === v.name.toLowerCase());
        if (old) await this.configs.delete(scope, old.id);
      }
    }
    const result = await this.configs.bulk(scope, { variables: Object.fromEntries(batch.map((v) => [v.name, v.value])), secret });
    const failed = result.errors[0];
    if (failed) throw conflict(`variable ${failed.name}: ${failed.message}`);
  }

  /**
   * The named volumes a service mounts, and whether each exists already (by name in the
   * environment: left as it is, whatever its size or path). One instance writes a volume: a
   * service with one and more than one replica is refused, before anything is created.
   */
  private async planVolumes(
    userId: string,
    service: ServiceOfFile,
    applicationId: string | null,
    environment: string,
    unmapped: Unmapped[],
  ): Promise<AppStep['volumes']> {
    if (service.volumes.length === 0) return [];
    if (service.replicas !== null && service.replicas > 1)
      throw invalid(
        'compose',
        `service ${service.name}: deploy.replicas is ${service.replicas}, but it mounts the volume ${service.volumes[0]!.source}, which one instance only can write: set replicas to 1 (or drop the volume)`,
      );
    const existing = applicationId ? await this.volumes.list(userId, applicationId, environment) : [];
    const planned: AppStep['volumes'] = [];
    for (const v of service.volumes) {
      const problem = mountPathProblem(v.path);
      if (problem) {
        unmapped.push({ service: service.name, key: `volumes: ${v.source}:${v.path}`, line: v.line, reason: `the mount path ${problem}` });
        continue;
      }
      planned.push({
        ...v,
        sizeMiB: v.sizeMiB ?? DEFAULT_VOLUME_MIB,
        defaulted: v.sizeMiB === null,
        present: existing.some((e) => e.name === v.name),
      });
    }
    return planned;
  }

  private async makePlan(userId: string, projectId: string, request: ComposeRequest): Promise<Plan> {
    const project = await this.projects.resolveById(userId, projectId);
    const file = parseComposeFile(request.compose);
    const unmapped = [...file.unmapped];
    const ordered = creationOrder(file.services);
    const recorded = await this.imports.forProject(project.id);
    const environment = request.environment ?? 'production';
    const items: PlanItem[] = [];

    const addonSteps: AddonStep[] = [];
    for (const service of ordered) {
      const kind = addonKindOf(service.image);
      if (!kind) continue;
      const name = addonNameFor(project.slug, service.name);
      const existingId = recorded.get(service.name)?.addon_id ?? null;
      addonSteps.push({ service, kind, name, existingId });
      items.push({
        service: service.name,
        resource: 'addon',
        action: existingId ? 'unchanged' : 'create',
        detail: `${kind} add-on ${name} (plan hobby)`,
      });
      if (service.build)
        unmapped.push({
          service: service.name,
          key: 'build',
          line: service.line,
          reason: `a ${kind} service becomes an add-on: nothing is built`,
        });
      if (service.command)
        unmapped.push({
          service: service.name,
          key: 'command',
          line: service.line,
          reason: `a ${kind} service becomes an add-on: the platform runs its server`,
        });
      for (const v of service.volumes)
        unmapped.push({
          service: service.name,
          key: `volumes: ${v.source}:${v.path}`,
          line: v.line,
          reason: `the ${kind} add-on keeps its data on the platform’s own server (and its backups): no volume is made`,
        });
      for (const [name] of Object.entries(service.environment))
        unmapped.push({
          service: service.name,
          key: `environment.${name}`,
          line: service.environmentLines[name] ?? service.line,
          reason: `the ${kind} add-on makes its own user, password and database: its URL is given to the applications that use it`,
        });
    }
    const addonNames = new Set(addonSteps.map((s) => s.service.name));
    const addonByService = new Map<string, { id: string | null; name: string }>(
      addonSteps.map((s) => [s.service.name, { id: s.existingId, name: s.name }]),
    );

    const appSteps: AppStep[] = [];
    for (const service of ordered) {
      if (addonNames.has(service.name)) continue;
      const slug = applicationSlugFor(service.name);
      const recordedId = recorded.get(service.name)?.application_id ?? null;
      const current = recordedId ? await this.apps.authorize(userId, recordedId) : null;
      if (service.image) vetImage(this.config, service.name, service.image, project.organization_slug);
      const source = service.image ? { image: service.image } : { repository: contextPath(service, request.base_dir) };
      if (service.image && service.build)
        unmapped.push({
          service: service.name,
          key: 'build',
          line: service.line,
          reason: 'the service names an image: it is deployed, not built',
        });

      const settings: AppStep['settings'] = {};
      if ('repository' in source) settings.github_repository = source.repository;
      if (service.healthCheckPath) settings.health_check_path = service.healthCheckPath;
      if (service.healthCheckTimeout !== null) settings.health_check_timeout = service.healthCheckTimeout;
      if (service.command) settings.start_command = service.command;
      const settingsChanged = Object.entries(settings)
        .filter(([k, v]) => !current || (current as Record<string, unknown>)[k] !== v)
        .map(([k]) => k);

      const envFiles = service.envFiles.flatMap((path) => readEnvFile(service, path, request.env_files, unmapped));
      const wired = wireEnvironment(service, envFiles, addonNames, unmapped);
      const existingVars = current
        ? new Map((await this.configs.resolve([{ scope: 'application', scopeId: current.id }])).map((v) => [v.name.toLowerCase(), v]))
        : new Map();
      const variablesChanged = wired.variables
        .filter((v) => {
          const old = existingVars.get(v.name.toLowerCase());
          return !old || old.value !== v.value || old.secret !== v.secret;
        })
        .map((v) => v.name);

      const attachments: AppStep['attachments'] = [];
      for (const a of wired.attachments) {
        const addon = addonByService.get(a.service)!;
        const present =
          !!current &&
          !!addon.id &&
          (await this.addons.show(userId, project.organization_slug, addon.name)).attachments.some(
            (x: { application_id: string; environment: string }) => x.application_id === current.id && x.environment === environment,
          );
        attachments.push({ addon: a.service, as: a.as, present });
      }
      const volumes = await this.planVolumes(userId, service, current?.id ?? null, environment, unmapped);
      const imageChanged = 'image' in source && !!current && recorded.get(service.name)?.image !== source.image;
      const scaleChanged = service.replicas !== null && (current?.process_counts?.web ?? null) !== service.replicas;
      appSteps.push({
        service,
        slug,
        existingId: current?.id ?? null,
        source,
        imageChanged,
        settings,
        settingsChanged,
        variables: wired.variables,
        variablesChanged,
        attachments,
        replicas: service.replicas,
        scaleChanged,
        volumes,
      });

      const act = (changed: boolean): PlanAction => (!current ? 'create' : changed ? 'update' : 'unchanged');
      items.push({
        service: service.name,
        resource: 'application',
        action: current ? 'unchanged' : 'create',
        detail: slug,
      });
      items.push({
        service: service.name,
        resource: 'source',
        action: act('image' in source ? imageChanged : settingsChanged.includes('github_repository')),
        detail: 'image' in source ? `image ${source.image} (deployed, not built)` : `built from ${source.repository}`,
      });
      const other = Object.entries(settings).filter(([k]) => k !== 'github_repository');
      if (other.length > 0)
        items.push({
          service: service.name,
          resource: 'settings',
          action: act(other.some(([k]) => settingsChanged.includes(k))),
          detail: other.map(([k, v]) => `${k}=${v}`).join(', '),
        });
      if (wired.variables.length > 0)
        items.push({
          service: service.name,
          resource: 'variables',
          action: act(variablesChanged.length > 0),
          // Names only: values (secrets above all) never appear in a plan.
          detail: wired.variables.map((v) => (v.secret ? `${v.name} (secret)` : v.name)).join(', '),
        });
      for (const a of attachments)
        items.push({
          service: service.name,
          resource: 'attachment',
          action: a.present ? 'unchanged' : 'create',
          detail: `${addonByService.get(a.addon)!.name} as ${a.as ?? (addonSteps.find((s) => s.service.name === a.addon)!.kind === 'postgres' ? 'DATABASE_URL' : 'REDIS_URL')} (${environment})`,
        });
      if (service.replicas !== null)
        items.push({ service: service.name, resource: 'scale', action: act(scaleChanged), detail: `web=${service.replicas}` });
      for (const v of volumes)
        items.push({
          service: service.name,
          resource: 'volume',
          action: v.present ? 'unchanged' : 'create',
          detail: `${v.name} at ${v.path}, ${v.sizeMiB} MiB (${v.defaulted ? 'the default: set x-slipway-size' : 'x-slipway-size'}) in ${environment}`,
        });
      if (needsDeploy(appSteps.at(-1)!))
        items.push({
          service: service.name,
          resource: 'deploy',
          action: 'create',
          detail: 'image' in source ? `deploy the image to ${environment}` : 'build the source and deploy it to production',
        });
    }
    if (recorded.size > 0) {
      const names = new Set(file.services.map((s) => s.name));
      for (const [service] of recorded)
        if (!names.has(service))
          unmapped.push({
            service,
            key: service,
            line: 1,
            reason: 'imported before and no longer in the file: left as it is (delete it yourself)',
          });
    }
    return {
      project: { id: project.id, slug: project.slug, organization_slug: project.organization_slug },
      environment,
      order: ordered.map((s) => s.name),
      addons: addonSteps,
      apps: appSteps,
      items,
      unmapped,
    };
  }
}

function readEnvFile(service: ServiceOfFile, path: string, files: Record<string, string> | undefined, unmapped: Unmapped[]) {
  const text = files?.[path];
  if (text === undefined) {
    unmapped.push({
      service: service.name,
      key: `env_file: ${path}`,
      line: service.line,
      reason: 'the file was not sent (the CLI sends the env files the Compose file names)',
    });
    return [];
  }
  if (Buffer.byteLength(text) > MAX_ENV_FILE_BYTES) {
    unmapped.push({
      service: service.name,
      key: `env_file: ${path}`,
      line: service.line,
      reason: `larger than ${MAX_ENV_FILE_BYTES} bytes`,
    });
    return [];
  }
  const parsed = parseDotenv(text);
  for (const e of parsed.errors)
    unmapped.push({ service: service.name, key: `env_file: ${path}: ${e.name}`, line: service.line, reason: e.message });
  return parsed.entries;
}

/** A new application, a changed image, source, setting or variable is deployed; an attachment releases by itself. */
function needsDeploy(step: AppStep): boolean {
  return !step.existingId || step.imageChanged || step.settingsChanged.length > 0 || step.variablesChanged.length > 0;
}

function view(plan: Plan) {
  return {
    project: plan.project,
    environment: plan.environment,
    order: plan.order,
    items: plan.items,
    unmapped: plan.unmapped,
    changes: plan.items.filter((i) => i.action !== 'unchanged').length,
  };
}
