import { isAbsolute, resolve } from 'node:path';
import type { Config } from '../../config.js';
import { parseImageReference, pullRegistries } from '../../platform/builder/image-reference.js';
import { forbidden, invalid } from '../../platform/errors.js';
import type { ComposeService, Unmapped } from './compose-file.js';

export type AddonKind = 'postgres' | 'redis';

/** The image of a Postgres or Redis server becomes an add-on of that kind. */
export function addonKindOf(image: string | null): AddonKind | null {
  if (!image) return null;
  const name = image.split('@')[0]!.replace(/:[^/]*$/, '');
  const last = name.split('/').pop()!;
  if (last === 'postgres' || last === 'postgresql' || last.startsWith('postgis')) return 'postgres';
  if (last === 'redis' || last === 'valkey') return 'redis';
  return null;
}

/** A variable whose name says it holds a credential is stored as a secret. */
export function looksSecret(name: string): boolean {
  return /PASSWORD|PASSWD|SECRET|TOKEN|CREDENTIAL|PRIVATE|(^|_)KEY$|API_?KEY/i.test(name);
}

/** An add-on's name: unique in the organization, so the project's slug comes first. */
export function addonNameFor(projectSlug: string, service: string): string {
  const slug = service
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
  return `${projectSlug}-${slug}`.slice(0, 63).replace(/-+$/, '');
}

export function applicationSlugFor(service: string): string {
  return service
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 63)
    .replace(/-+$/, '');
}

/** Where a service's build context is on this server: a path the local-source rules then allow or refuse. */
export function contextPath(service: ComposeService, baseDir: string | undefined): string {
  const context = service.build!.context;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(context) || context.startsWith('git@')) return context;
  if (isAbsolute(context)) return resolve(context);
  if (!baseDir)
    throw invalid('base_dir', `service ${service.name}: its build context '${context}' is relative: send base_dir (the file's directory)`);
  if (!isAbsolute(baseDir)) throw invalid('base_dir', 'must be an absolute path');
  return resolve(baseDir, context);
}

/** One service's variables after the add-ons took theirs, and which add-ons it is attached to (and as what). */
export interface WiredEnvironment {
  variables: Array<{ name: string; value: string; secret: boolean }>;
  attachments: Array<{ service: string; as: string | undefined }>;
}

/**
 * Splits an application's variables: those that point at a Postgres or Redis service (its host name
 * in a URL) become an attachment of that add-on under the same name; other references to the host
 * cannot be kept (the add-on's address is in its URL only). `depends_on` an add-on service attaches
 * it under its default name (DATABASE_URL, REDIS_URL).
 */
export function wireEnvironment(
  service: ComposeService,
  envFiles: Array<{ name: string; value: string }>,
  addonServices: Set<string>,
  unmapped: Unmapped[],
): WiredEnvironment {
  const variables: WiredEnvironment['variables'] = [];
  const attachments: WiredEnvironment['attachments'] = [];
  const entries = [
    // Values in an env file are kept out of the Compose file for a reason: stored as secrets.
    ...envFiles.map((e) => ({ ...e, secret: true })),
    ...Object.entries(service.environment).map(([name, value]) => ({ name, value, secret: looksSecret(name) })),
  ];
  for (const entry of entries) {
    const target = [...addonServices].find((host) => referencesHost(entry.value, host));
    if (!target) {
      variables.push(entry);
      continue;
    }
    if (entry.value.includes('://') && !attachments.some((a) => a.service === target))
      attachments.push({ service: target, as: entry.name });
    else
      unmapped.push({
        service: service.name,
        key: `environment.${entry.name}`,
        line: service.environmentLines[entry.name] ?? service.line,
        reason: `it points at the ${target} service, now an add-on: its whole URL is given in a variable (host and port variables are not kept)`,
      });
  }
  for (const dep of service.dependsOn)
    if (addonServices.has(dep) && !attachments.some((a) => a.service === dep)) attachments.push({ service: dep, as: undefined });
  // Later entries (environment) win over env files, as in Compose.
  const byName = new Map(variables.map((v) => [v.name.toLowerCase(), v]));
  return { variables: [...byName.values()], attachments };
}

function referencesHost(value: string, host: string): boolean {
  const escaped = host.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(^|[@/=])${escaped}($|[:/?])`, 'i').test(value);
}

/**
 * The checks an image deploy makes before it looks the image up, made at plan time so that a
 * file naming an image that cannot be deployed is refused before anything is created.
 */
export function vetImage(config: Config, service: string, image: string, organizationSlug: string) {
  const registries = pullRegistries(config);
  const own = registries.find((r) => r.own) ?? null;
  const ref = parseImageReference(image.trim(), own?.host ?? null);
  if (!ref)
    throw invalid(
      'compose',
      `service ${service}: ${image} is not an image reference (host/name:tag, or org/project/app:tag in this platform's registry)`,
    );
  const registry = registries.find((r) => r.host === ref.host);
  if (!registry) {
    const allowed =
      registries.map((r) => r.host).join(', ') || 'none (the operator has set neither REGISTRY_URL nor IMAGE_PULL_REGISTRIES)';
    throw invalid('compose', `service ${service}: the registry ${ref.host} is not one images may be deployed from; allowed: ${allowed}`);
  }
  const [org, ...rest] = ref.name.split('/');
  if (registry.own && (org !== organizationSlug || rest.length !== 2))
    throw forbidden(`service ${service}: ${ref.name} is not a repository of the organization ${organizationSlug}`);
}
