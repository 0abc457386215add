/**
 * Names and labels of everything the Kubernetes runtime creates. Kubernetes names are
 * DNS labels (at most 63 lower-case letters, digits and dashes), so long slugs are cut
 * and keep a short hash of the whole name: two long names never collide.
 */
import { createHash } from 'node:crypto';
import type { WorkloadPlan } from '../application-runtime.js';

export const MAX_NAME = 63;

export const LABEL = {
  managedBy: 'app.kubernetes.io/managed-by',
  applicationId: 'slipway.dev/application-id',
  environmentId: 'slipway.dev/environment-id',
  processType: 'slipway.dev/process-type',
  releaseVersion: 'slipway.dev/release-version',
  /** What an object is for: `config`, `registry`, `web`, `process`, `one-off`. */
  component: 'slipway.dev/component',
  /** An add-on's objects and pods (its NetworkPolicy selects them by it). */
  addonId: 'slipway.dev/addon-id',
} as const;

export const ANNOTATION = {
  deploymentId: 'slipway.dev/deployment-id',
} as const;

export const MANAGER = 'slipway';

export function shortHash(text: string, length = 8): string {
  return createHash('sha256').update(text).digest('hex').slice(0, length);
}

/** Lower-case, only `[a-z0-9-]`, no leading/trailing dash (a Procfile type may hold `_`). */
export function sanitize(text: string): string {
  return (
    text
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, '-')
      .replace(/-+/g, '-')
      .replace(/^-+|-+$/g, '') || 'x'
  );
}

/** A DNS-1123 label from parts; over 63 characters it is cut and ends with a hash of the full name. */
export function dnsLabel(...parts: string[]): string {
  const full = parts.map(sanitize).join('-');
  if (full.length <= MAX_NAME) return full;
  const hash = shortHash(full);
  return `${full.slice(0, MAX_NAME - hash.length - 1).replace(/-+$/, '')}-${hash}`;
}

/** A DNS-1035 label (Service names): must also start with a letter. */
export function dns1035Label(...parts: string[]): string {
  const name = dnsLabel(...parts);
  return /^[a-z]/.test(name) ? name : dnsLabel('s', ...parts);
}

/**
 * A DNS-1123 label naming exactly these parts. Slugs and process types hold dashes (and `_`
 * reads as `-`), so `a-b`+`c` and `a`+`b-c`, or `my_worker` and `my-worker`, would read alike:
 * the hash of the parts as given keeps two application environments or process types apart.
 */
export function distinctLabel(...parts: string[]): string {
  return dnsLabel(...parts, shortHash(JSON.stringify(parts)));
}

const LABEL_VALUE = /^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$/;

/**
 * The process-type label value (selectors, pod lookups): the type itself when it is a valid
 * label value, else a DNS label with a hash of the type, so two types never share pods.
 */
export function processTypeLabel(processType: string): string {
  return processType.length <= MAX_NAME && LABEL_VALUE.test(processType) ? processType : distinctLabel(processType);
}

export function namespaceName(prefix: string, organizationSlug: string): string {
  return dnsLabel(`${prefix}${organizationSlug}`);
}

/** What names every object of one application environment. */
export interface WorkloadNames {
  namespace: string;
  base: string;
  deployment(processType: string): string;
  container(processType: string): string;
  service: string;
  ingress: string;
  configSecret(releaseVersion: number): string;
  pullSecret: string;
  job(processType: string, deploymentId: string): string;
}

export function workloadNames(
  plan: Pick<WorkloadPlan, 'organization' | 'project' | 'application' | 'environment'>,
  namespacePrefix: string,
): WorkloadNames {
  const base = dnsLabel(plan.project.slug, plan.application.slug, plan.environment.slug);
  // Applications of one organization share its namespace: every name holds a hash of the exact
  // parts (distinctLabel), so no two application environments or process types share an object.
  const parts = [plan.project.slug, plan.application.slug, plan.environment.slug];
  return {
    namespace: namespaceName(namespacePrefix, plan.organization.slug),
    base,
    deployment: (type) => distinctLabel(...parts, type),
    container: (type) => dnsLabel(type),
    service: dns1035Label(distinctLabel(...parts, 'web')),
    ingress: distinctLabel(...parts, 'web'),
    configSecret: (version) => distinctLabel(...parts, `v${version}`),
    pullSecret: distinctLabel(...parts, 'registry'),
    // The random tail of the deployment id (uuid v7 starts with the clock, alike for minutes).
    job: (type, deploymentId) => distinctLabel(...parts, type, shortHash(deploymentId)),
  };
}

/** Labels shared by every object of one application environment (the selector of `reconcile(null)`). */
export function appLabels(applicationId: string, environmentId: string): Record<string, string> {
  return { [LABEL.managedBy]: MANAGER, [LABEL.applicationId]: applicationId, [LABEL.environmentId]: environmentId };
}

export function labelSelector(labels: Record<string, string>): string {
  return Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}
