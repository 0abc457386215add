/**
 * The Kubernetes objects of one deployment, built from a `WorkloadPlan` (pure: no I/O).
 * Configuration values only ever go into the release's config Secret; Deployments and Jobs
 * refer to it with `envFrom`, so a spec (visible to anyone who may read Deployments) never
 * holds a value.
 */
import type {
  V1Container,
  V1Deployment,
  V1Ingress,
  V1Job,
  V1Namespace,
  V1NetworkPolicy,
  V1PersistentVolumeClaim,
  V1PodSpec,
  V1Probe,
  V1Secret,
  V1Service,
} from '@kubernetes/client-node';
import type { PlanVolume, WorkloadPlan } from '../application-runtime.js';
import { ANNOTATION, LABEL, appLabels, processTypeLabel, workloadNames, type WorkloadNames } from './names.js';

/** The port every web container listens on (`PORT`); the Service maps port 80 to it. */
export const WEB_PORT = 5000;
export const ONE_OFF_TYPES = new Set(['release', 'postdeploy']);
/** Finished one-off Jobs stay this long so their logs can still be read. */
const JOB_TTL_SECONDS = 3600;

/**
 * The user every application container runs as (not root; the image's USER is overridden):
 * what the restricted Pod Security Standard asks, and the same for every image.
 */
export const POD_USER_ID = 10001;
/** The Pod Security Standard every organization namespace enforces. */
export const POD_SECURITY_LEVEL = 'restricted';
export const NETWORK_POLICY_NAME = 'slipway-isolation';

export interface ManifestOptions {
  namespacePrefix: string;
  ingressClass: string | null;
  hasPullSecret: boolean;
  /** Annotations of every Ingress, e.g. `cert-manager.io/cluster-issuer` so custom domains get certificates. */
  ingressAnnotations?: Record<string, string>;
}

export interface WorkloadManifests {
  names: WorkloadNames;
  namespace: V1Namespace;
  configSecret: V1Secret;
  /** One per long-running process type of the formation (replicas may be 0). */
  deployments: Array<{ processType: string; replicas: number; manifest: V1Deployment }>;
  service: V1Service | null;
  ingress: V1Ingress | null;
  /** One PersistentVolumeClaim per volume of the plan (never deleted by a deployment: the data outlives it). */
  volumeClaims: V1PersistentVolumeClaim[];
}

/** A volume's claim: named by the volume's id (a uuid is a valid DNS name), so renaming nothing can orphan it. */
export const volumeClaimName = (volume: Pick<PlanVolume, 'id'>) => `slipway-volume-${volume.id}`;

const volumesOf = (plan: WorkloadPlan, processType: string) => (plan.volumes ?? []).filter((v) => v.processType === processType);

/** The claim of a volume: one node writes it (ReadWriteOnce), of the volume's size (growing it asks the storage class to expand). */
export function volumeClaimManifest(plan: WorkloadPlan, names: WorkloadNames, volume: PlanVolume): V1PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: volumeClaimName(volume),
      namespace: names.namespace,
      labels: { ...appLabels(plan.application.id, plan.environment.id), [LABEL.processType]: processTypeLabel(volume.processType) },
      annotations: { 'slipway.dev/volume-name': volume.name },
    },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: `${volume.sizeMiB}Mi` } } },
  };
}

export const isWeb = (processType: string) => processType === 'web';

/** The long-running process types the plan runs: its formation, minus one-offs and unknown types. */
export function formationTypes(plan: WorkloadPlan): string[] {
  return Object.keys(plan.formation)
    .filter((t) => !ONE_OFF_TYPES.has(t) && plan.processes[t])
    .sort();
}

function processLabels(plan: WorkloadPlan, processType: string): Record<string, string> {
  return {
    ...appLabels(plan.application.id, plan.environment.id),
    [LABEL.processType]: processTypeLabel(processType),
    [LABEL.releaseVersion]: String(plan.release.version),
  };
}

/** Labels that select one process type's pods (never the release version: selectors are immutable). */
export function processSelector(plan: Pick<WorkloadPlan, 'application' | 'environment'>, processType: string): Record<string, string> {
  return { ...appLabels(plan.application.id, plan.environment.id), [LABEL.processType]: processTypeLabel(processType) };
}

function resources(plan: WorkloadPlan, processType: string) {
  const r = plan.resources[processType];
  if (!r) return undefined;
  return {
    requests: { cpu: `${r.cpuRequestMillicores}m`, memory: `${r.memoryRequestMiB}Mi` },
    limits: { cpu: `${r.cpuLimitMillicores}m`, memory: `${r.memoryLimitMiB}Mi` },
  };
}

function healthProbe(plan: WorkloadPlan, timing: Omit<V1Probe, 'httpGet'>): V1Probe {
  return {
    httpGet: {
      path: plan.healthCheck.path,
      port: 'http',
      ...(plan.healthCheck.host ? { httpHeaders: [{ name: 'Host', value: plan.healthCheck.host }] } : {}),
    },
    timeoutSeconds: 5,
    ...timing,
  };
}

function container(plan: WorkloadPlan, names: WorkloadNames, processType: string, withProbes: boolean): V1Container {
  const definition = plan.processes[processType]!;
  const web = isWeb(processType) && withProbes;
  // Explicit `env` wins over `envFrom`: PORT and the Procfile entry's own variables override the config.
  const env = [
    ...(web ? [{ name: 'PORT', value: String(WEB_PORT) }] : []),
    ...Object.entries(definition.env ?? {})
      .filter(([k]) => !(web && k === 'PORT'))
      .map(([name, value]) => ({ name, value })),
  ];
  return {
    name: names.container(processType),
    image: plan.image.registryReference ?? '',
    command: ['/bin/sh', '-c', definition.cmd],
    envFrom: [{ secretRef: { name: names.configSecret(plan.release.version) } }],
    ...(env.length ? { env } : {}),
    ...(volumesOf(plan, processType).length
      ? { volumeMounts: volumesOf(plan, processType).map((v) => ({ name: `volume-${v.name}`, mountPath: v.mountPath })) }
      : {}),
    resources: resources(plan, processType),
    securityContext: {
      allowPrivilegeEscalation: false,
      privileged: false,
      capabilities: { drop: ['ALL'] },
      runAsNonRoot: true,
      runAsUser: POD_USER_ID,
      runAsGroup: POD_USER_ID,
    },
    ...(web
      ? {
          ports: [{ name: 'http', containerPort: WEB_PORT, protocol: 'TCP' }],
          readinessProbe: healthProbe(plan, { periodSeconds: 5, failureThreshold: 3 }),
          // The startup probe gives a slow boot the whole deployment timeout before liveness may restart it.
          startupProbe: healthProbe(plan, { periodSeconds: 5, failureThreshold: Math.max(1, Math.ceil(plan.timeoutSeconds / 5)) }),
          livenessProbe: healthProbe(plan, { periodSeconds: 10, failureThreshold: 6 }),
        }
      : {}),
  };
}

function podSpec(
  plan: WorkloadPlan,
  names: WorkloadNames,
  processType: string,
  options: ManifestOptions,
  oneOff: boolean,
  node: string | null = null,
): V1PodSpec {
  return {
    containers: [container(plan, names, processType, !oneOff)],
    ...(oneOff ? { restartPolicy: 'Never' } : {}),
    // The process type's volumes, in its instance's pod and in its one-off runs (shared, as locally). A
    // ReadWriteOnce claim is attached to one node at a time: a run beside a running instance goes to its node.
    ...(node ? { affinity: { nodeAffinity: sameNode(node) } } : {}),
    ...(volumesOf(plan, processType).length
      ? {
          volumes: volumesOf(plan, processType).map((v) => ({
            name: `volume-${v.name}`,
            persistentVolumeClaim: { claimName: volumeClaimName(v) },
          })),
        }
      : {}),
    ...(options.hasPullSecret ? { imagePullSecrets: [{ name: names.pullSecret }] } : {}),
    enableServiceLinks: false,
    // Applications never talk to the Kubernetes API: no token in their file system.
    automountServiceAccountToken: false,
    securityContext: {
      runAsNonRoot: true,
      runAsUser: POD_USER_ID,
      runAsGroup: POD_USER_ID,
      fsGroup: POD_USER_ID,
      seccompProfile: { type: 'RuntimeDefault' },
    },
  };
}

export function deploymentManifest(plan: WorkloadPlan, names: WorkloadNames, processType: string, options: ManifestOptions): V1Deployment {
  const labels = processLabels(plan, processType);
  const annotations = { [ANNOTATION.deploymentId]: plan.deploymentId };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: names.deployment(processType), namespace: names.namespace, labels, annotations },
    spec: {
      replicas: plan.formation[processType] ?? 0,
      selector: { matchLabels: processSelector(plan, processType) },
      // Zero downtime: a new pod must be ready before an old one goes. With a volume (ReadWriteOnce, one
      // writer) the old pod stops first: stop-then-start, as on the local runtime.
      strategy: volumesOf(plan, processType).length
        ? { type: 'Recreate' }
        : { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
      progressDeadlineSeconds: Math.max(1, plan.timeoutSeconds),
      // The stability window: a new pod counts as available (and an old one goes) only once it stayed ready
      // this long; a crash inside it keeps the previous release's pods. Kubernetes wants it below the deadline.
      ...(plan.stabilitySeconds ? { minReadySeconds: Math.min(plan.stabilitySeconds, Math.max(0, plan.timeoutSeconds - 1)) } : {}),
      revisionHistoryLimit: 3,
      template: {
        // The deployment id on the template rolls the pods even when the release is the same.
        metadata: { labels, annotations },
        spec: podSpec(plan, names, processType, options, false),
      },
    },
  };
}

/** Only the node named (by its object name, not a label that may differ from it). */
const sameNode = (node: string) => ({
  requiredDuringSchedulingIgnoredDuringExecution: {
    nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: [node] }] }],
  },
});

/**
 * A one-off run of the process type (`release`, `slipway run`). `node`: where the process type's
 * running instance holds its volumes (ReadWriteOnce), so the run can mount them too.
 */
export function jobManifest(
  plan: WorkloadPlan,
  processType: string,
  options: ManifestOptions,
  activeDeadlineSeconds: number,
  node: string | null = null,
): V1Job {
  const names = workloadNames(plan, options.namespacePrefix);
  const labels = { ...processLabels(plan, processType), [LABEL.component]: 'one-off' };
  const annotations = { [ANNOTATION.deploymentId]: plan.deploymentId };
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: names.job(processType, plan.deploymentId), namespace: names.namespace, labels, annotations },
    spec: {
      backoffLimit: 0,
      activeDeadlineSeconds: Math.max(1, Math.ceil(activeDeadlineSeconds)),
      ttlSecondsAfterFinished: JOB_TTL_SECONDS,
      template: { metadata: { labels, annotations }, spec: podSpec(plan, names, processType, options, true, node) },
    },
  };
}

/** The organization's namespace, labelled so Pod Security admission refuses any pod below the restricted standard. */
export function namespaceManifest(names: Pick<WorkloadNames, 'namespace'>): V1Namespace {
  return {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: {
      name: names.namespace,
      labels: {
        [LABEL.managedBy]: 'slipway',
        'pod-security.kubernetes.io/enforce': POD_SECURITY_LEVEL,
        'pod-security.kubernetes.io/enforce-version': 'latest',
        'pod-security.kubernetes.io/audit': POD_SECURITY_LEVEL,
        'pod-security.kubernetes.io/warn': POD_SECURITY_LEVEL,
      },
    },
  };
}

/**
 * Addresses an application never reaches: private networks (the cluster's pods, services and
 * nodes, where the platform and its database run), link-local (the cloud's metadata service),
 * loopback and carrier-grade NAT.
 */
export const EGRESS_DENIED_CIDRS = {
  ipv4: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', '169.254.0.0/16', '127.0.0.0/8'],
  ipv6: ['fc00::/7', 'fe80::/10', '::1/128'],
};

/**
 * Isolation of an organization's namespace. In: its pods accept connections from pods of the
 * same namespace (the same organization) and from the ingress controller's namespace only, so
 * no other organization's pod can reach them. Out: the same namespace, the cluster's DNS, and
 * (unless `outbound` is off) the internet, never private or link-local addresses: the
 * platform's namespace, the nodes and the metadata service stay unreachable.
 */
export function networkPolicyManifest(
  names: Pick<WorkloadNames, 'namespace'>,
  ingressNamespace: string,
  { outbound = true } = {},
): V1NetworkPolicy {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: NETWORK_POLICY_NAME, namespace: names.namespace, labels: { [LABEL.managedBy]: 'slipway' } },
    spec: {
      // Every pod but the add-ons': NetworkPolicies add up, so this one must not let the whole
      // namespace reach an add-on (its own policy admits the attached applications only).
      podSelector: { matchExpressions: [{ key: LABEL.addonId, operator: 'DoesNotExist' }] },
      policyTypes: ['Ingress', 'Egress'],
      ingress: [
        // client-node's model spells `from` as `_from` (it serializes it back to `from`).
        { _from: [{ podSelector: {} }] },
        { _from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ingressNamespace } } }] },
      ],
      egress: [
        { to: [{ podSelector: {} }] },
        {
          to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } } }],
          ports: [
            { protocol: 'UDP', port: 53 },
            { protocol: 'TCP', port: 53 },
          ],
        },
        ...(outbound
          ? [
              {
                to: [
                  { ipBlock: { cidr: '0.0.0.0/0', except: EGRESS_DENIED_CIDRS.ipv4 } },
                  { ipBlock: { cidr: '::/0', except: EGRESS_DENIED_CIDRS.ipv6 } },
                ],
              },
            ]
          : []),
      ],
    },
  };
}

/** ALL of the release's configuration; immutable, one per release version. */
export function configSecretManifest(plan: WorkloadPlan, names: WorkloadNames): V1Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: names.configSecret(plan.release.version),
      namespace: names.namespace,
      labels: {
        ...appLabels(plan.application.id, plan.environment.id),
        [LABEL.releaseVersion]: String(plan.release.version),
        [LABEL.component]: 'config',
      },
    },
    type: 'Opaque',
    immutable: true,
    stringData: { ...plan.env },
  };
}

/** The image pull secret from a `.dockerconfigjson` document. */
export function pullSecretManifest(plan: WorkloadPlan, names: WorkloadNames, dockerConfigJson: string): V1Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: names.pullSecret,
      namespace: names.namespace,
      labels: { ...appLabels(plan.application.id, plan.environment.id), [LABEL.component]: 'registry' },
    },
    type: 'kubernetes.io/dockerconfigjson',
    data: { '.dockerconfigjson': Buffer.from(dockerConfigJson).toString('base64') },
  };
}

export function serviceManifest(plan: WorkloadPlan, names: WorkloadNames): V1Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: names.service,
      namespace: names.namespace,
      labels: { ...appLabels(plan.application.id, plan.environment.id), [LABEL.component]: 'web' },
    },
    spec: {
      type: 'ClusterIP',
      selector: processSelector(plan, 'web'),
      ports: [{ name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' }],
    },
  };
}

/**
 * The platform host name and every verified custom domain route to the web Service; the
 * custom domains get TLS from the Secret `<ingress>-tls`, which cert-manager fills when the
 * configured annotations name an issuer (KUBERNETES_INGRESS_ANNOTATIONS).
 */
export function ingressManifest(
  plan: WorkloadPlan,
  names: WorkloadNames,
  ingressClass: string,
  annotations: Record<string, string> = {},
): V1Ingress {
  const http = { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: names.service, port: { name: 'http' } } } }] };
  const domains = plan.customDomains ?? [];
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: {
      name: names.ingress,
      namespace: names.namespace,
      labels: { ...appLabels(plan.application.id, plan.environment.id), [LABEL.component]: 'web' },
      ...(Object.keys(annotations).length ? { annotations } : {}),
    },
    spec: {
      ingressClassName: ingressClass,
      rules: [plan.hostname, ...domains].map((host) => ({ host, http })),
      ...(domains.length ? { tls: [{ hosts: domains, secretName: `${names.ingress}-tls` }] } : {}),
    },
  };
}

/** Every long-running object of the plan. */
export function workloadManifests(plan: WorkloadPlan, options: ManifestOptions): WorkloadManifests {
  const names = workloadNames(plan, options.namespacePrefix);
  const types = formationTypes(plan);
  const hasWeb = types.some(isWeb);
  return {
    names,
    namespace: namespaceManifest(names),
    configSecret: configSecretManifest(plan, names),
    deployments: types.map((processType) => ({
      processType,
      replicas: plan.formation[processType] ?? 0,
      manifest: deploymentManifest(plan, names, processType, options),
    })),
    service: hasWeb ? serviceManifest(plan, names) : null,
    ingress: hasWeb && options.ingressClass ? ingressManifest(plan, names, options.ingressClass, options.ingressAnnotations) : null,
    volumeClaims: (plan.volumes ?? []).map((v) => volumeClaimManifest(plan, names, v)),
  };
}
