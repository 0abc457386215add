import { describe, expect, it } from 'vitest';
import { Deployment } from 'kubernetes-models/apps/v1';
import { Job } from 'kubernetes-models/batch/v1';
import { Ingress, NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { ObjectSerializer } from '@kubernetes/client-node/dist/gen/models/ObjectSerializer.js';
import { Namespace, PersistentVolumeClaim, Secret, Service } from 'kubernetes-models/v1';
import { POD_CLASSES, POD_CLASS_NAMES } from '../../src/modules/applications/pod-classes.js';
import {
  POD_USER_ID,
  jobManifest,
  namespaceManifest,
  networkPolicyManifest,
  pullSecretManifest,
  workloadManifests,
  WEB_PORT,
} from '../../src/platform/runtime/kubernetes/manifests.js';
import { podSecurityViolations } from '../helpers/fake-kube-api.js';
import { ANNOTATION, LABEL, MAX_NAME, dnsLabel, processTypeLabel, workloadNames } from '../../src/platform/runtime/kubernetes/names.js';
import { SECRET_VALUE, makePlan } from './plan-fixture.js';

const options = { namespacePrefix: 'slipway-', ingressClass: 'nginx', hasPullSecret: true };
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

describe('Kubernetes manifests', () => {
  it.each(POD_CLASS_NAMES)('are valid Kubernetes objects for web, worker and a custom type with pod class %s', (podClass) => {
    const plan = makePlan({
      podClass,
      processes: {
        web: { cmd: 'node server.js', env: { NODE_ENV: 'production' } },
        worker: { cmd: 'node worker.js', env: {} },
        clock_tick: { cmd: 'node clock.js', env: { TZ: 'UTC' } },
        release: { cmd: 'node migrate.js', env: {} },
        postdeploy: { cmd: 'node warm.js', env: {} },
      },
      formation: { web: 3, worker: 1, clock_tick: 0 },
    });
    const m = workloadManifests(plan, options);
    new Namespace(m.namespace as never).validate();
    new Secret(m.configSecret as never).validate();
    new Secret(pullSecretManifest(plan, m.names, '{"auths":{}}') as never).validate();
    new Service(m.service as never).validate();
    new Ingress(m.ingress as never).validate();
    expect(m.deployments.map((d) => [d.processType, d.manifest.spec!.replicas])).toEqual([
      ['clock_tick', 0],
      ['web', 3],
      ['worker', 1],
    ]);
    const c = POD_CLASSES[podClass];
    const expected = {
      requests: { cpu: `${c.cpu_request_m}m`, memory: `${c.memory_request_mib}Mi` },
      limits: { cpu: `${c.cpu_limit_m}m`, memory: `${c.memory_limit_mib}Mi` },
    };
    for (const { manifest } of m.deployments) {
      new Deployment(manifest as never).validate();
      expect(manifest.spec!.template.spec!.containers[0]!.resources).toEqual(expected);
      expect(manifest.spec!.template.spec!.containers[0]!.name).toMatch(DNS_LABEL);
    }
    for (const type of ['release', 'postdeploy']) {
      const job = jobManifest(plan, type, options, 120);
      new Job(job as never).validate();
      expect(job.spec).toMatchObject({ backoffLimit: 0, activeDeadlineSeconds: 120 });
      expect(job.spec!.template.spec!.restartPolicy).toBe('Never');
      expect(job.spec!.template.spec!.containers[0]!.resources).toEqual(expected);
    }
  });

  it('hardens every pod for the restricted Pod Security Standard (issue 10)', () => {
    const plan = makePlan({ formation: { web: 2, worker: 1 } });
    const m = workloadManifests(plan, options);
    const specs = [
      ...m.deployments.map((d) => d.manifest.spec!.template.spec!),
      jobManifest(plan, 'release', options, 60).spec!.template.spec!,
    ];
    for (const spec of specs) {
      expect(spec.automountServiceAccountToken).toBe(false);
      expect(spec.securityContext).toEqual({
        runAsNonRoot: true,
        runAsUser: POD_USER_ID,
        runAsGroup: POD_USER_ID,
        fsGroup: POD_USER_ID,
        seccompProfile: { type: 'RuntimeDefault' },
      });
      expect(POD_USER_ID).toBeGreaterThan(0);
      for (const container of spec.containers) {
        expect(container.securityContext).toEqual({
          allowPrivilegeEscalation: false,
          privileged: false,
          capabilities: { drop: ['ALL'] },
          runAsNonRoot: true,
          runAsUser: POD_USER_ID,
          runAsGroup: POD_USER_ID,
        });
      }
      // The checks the Pod Security admission controller runs (as the fake API server implements them).
      expect(podSecurityViolations(spec as never, 'restricted')).toEqual([]);
    }
  });

  it('labels the organization namespace restricted and isolates it with a NetworkPolicy (in: same namespace and the ingress controller; out: same namespace, DNS, the internet but no private address)', () => {
    const names = workloadNames(makePlan(), 'slipway-');
    const namespace = namespaceManifest(names);
    new Namespace(namespace as never).validate();
    expect(namespace.metadata!.labels).toMatchObject({
      'pod-security.kubernetes.io/enforce': 'restricted',
      'pod-security.kubernetes.io/enforce-version': 'latest',
      'pod-security.kubernetes.io/audit': 'restricted',
      'pod-security.kubernetes.io/warn': 'restricted',
    });
    // What client-node sends (its model spells `from` as `_from`).
    const policy = ObjectSerializer.serialize(networkPolicyManifest(names, 'ingress-nginx'), 'V1NetworkPolicy', '');
    new NetworkPolicy(policy).validate();
    expect(policy).toEqual({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'slipway-isolation', namespace: names.namespace, labels: { [LABEL.managedBy]: 'slipway' } },
      spec: {
        podSelector: { matchExpressions: [{ key: 'slipway.dev/addon-id', operator: 'DoesNotExist' }] },
        policyTypes: ['Ingress', 'Egress'],
        ingress: [
          { from: [{ podSelector: {} }] },
          { from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } } }] },
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
          {
            to: [
              {
                ipBlock: {
                  cidr: '0.0.0.0/0',
                  except: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', '169.254.0.0/16', '127.0.0.0/8'],
                },
              },
              { ipBlock: { cidr: '::/0', except: ['fc00::/7', 'fe80::/10', '::1/128'] } },
            ],
          },
        ],
      },
    });
    // With outbound off (SANDBOX_OUTBOUND=false) only the same namespace and DNS remain.
    const closed = ObjectSerializer.serialize(networkPolicyManifest(names, 'ingress-nginx', { outbound: false }), 'V1NetworkPolicy', '');
    new NetworkPolicy(closed).validate();
    expect(closed.spec.egress).toEqual(policy.spec.egress.slice(0, 2));
  });

  it('m1.large (the default) is 500m/1000m cpu and 1024Mi/1536Mi memory', () => {
    const m = workloadManifests(makePlan({ podClass: 'm1.large' }), options);
    expect(m.deployments[0]!.manifest.spec!.template.spec!.containers[0]!.resources).toEqual({
      requests: { cpu: '500m', memory: '1024Mi' },
      limits: { cpu: '1000m', memory: '1536Mi' },
    });
  });

  it('keeps every configuration value out of Deployments and Jobs (they read the config Secret)', () => {
    const plan = makePlan();
    const m = workloadManifests(plan, options);
    const specs = JSON.stringify([...m.deployments.map((d) => d.manifest), jobManifest(plan, 'release', options, 60)]);
    for (const value of Object.values(plan.env)) expect(specs).not.toContain(value);
    expect(specs).not.toContain(SECRET_VALUE);
    for (const { manifest } of m.deployments) {
      expect(manifest.spec!.template.spec!.containers[0]!.envFrom).toEqual([{ secretRef: { name: m.names.configSecret(1) } }]);
    }
    // ALL the configuration is in the immutable Secret.
    expect(m.configSecret.stringData).toEqual(plan.env);
    expect(m.configSecret.immutable).toBe(true);
  });

  it('gives web a port, PORT, probes with the Host header, a zero-downtime strategy and the deployment id', () => {
    const plan = makePlan({ timeoutSeconds: 45 });
    const m = workloadManifests(plan, options);
    const web = m.deployments.find((d) => d.processType === 'web')!.manifest;
    const container = web.spec!.template.spec!.containers[0]!;
    expect(container.command).toEqual(['/bin/sh', '-c', plan.processes.web!.cmd]);
    expect(container.image).toBe(plan.image.registryReference);
    expect(container.ports).toEqual([{ name: 'http', containerPort: WEB_PORT, protocol: 'TCP' }]);
    expect(container.env).toEqual([
      { name: 'PORT', value: String(WEB_PORT) },
      { name: 'GREETING', value: 'hello' },
    ]);
    for (const probe of [container.readinessProbe, container.livenessProbe, container.startupProbe]) {
      expect(probe!.httpGet).toEqual({ path: '/health', port: 'http', httpHeaders: [{ name: 'Host', value: 'api.example.test' }] });
    }
    expect(web.spec!.strategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } });
    expect(web.spec!.progressDeadlineSeconds).toBe(45);
    // No stability window in this plan; with one, pods must stay ready that long (below the deadline) to count.
    expect(web.spec!.minReadySeconds).toBeUndefined();
    const windowed = workloadManifests({ ...plan, stabilitySeconds: 20 }, options).deployments[0]!.manifest;
    expect(windowed.spec!.minReadySeconds).toBe(20);
    expect(workloadManifests({ ...plan, stabilitySeconds: 600 }, options).deployments[0]!.manifest.spec!.minReadySeconds).toBe(44);
    expect(web.metadata!.annotations![ANNOTATION.deploymentId]).toBe(plan.deploymentId);
    expect(web.spec!.template.metadata!.annotations![ANNOTATION.deploymentId]).toBe(plan.deploymentId);
    expect(web.spec!.template.metadata!.labels).toMatchObject({
      [LABEL.managedBy]: 'slipway',
      [LABEL.applicationId]: plan.application.id,
      [LABEL.environmentId]: plan.environment.id,
      [LABEL.processType]: 'web',
      [LABEL.releaseVersion]: '1',
    });
    // The selector never names the release: selectors are immutable.
    expect(Object.keys(web.spec!.selector.matchLabels!)).not.toContain(LABEL.releaseVersion);
    expect(web.spec!.template.spec).toMatchObject({
      enableServiceLinks: false,
      automountServiceAccountToken: false,
      imagePullSecrets: [{ name: m.names.pullSecret }],
    });
    const worker = m.deployments.find((d) => d.processType === 'worker')!.manifest.spec!.template.spec!.containers[0]!;
    expect(worker.readinessProbe).toBeUndefined();
    expect(worker.ports).toBeUndefined();
    expect(JSON.stringify(worker.env ?? [])).not.toContain('PORT');
    expect(m.service!.spec!.ports).toEqual([{ name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' }]);
    expect(m.ingress!.spec!.rules![0]!.host).toBe(plan.hostname);
  });

  it('adds verified custom domains as Ingress hosts with TLS, and the configured annotations (cert-manager)', () => {
    const plan = { ...makePlan(), customDomains: ['shop.example.com', 'www.example.com'] };
    const annotations = { 'cert-manager.io/cluster-issuer': 'letsencrypt' };
    const m = workloadManifests(plan, { ...options, ingressAnnotations: annotations });
    new Ingress(m.ingress as never).validate();
    expect(m.ingress!.metadata!.annotations).toEqual(annotations);
    expect(m.ingress!.spec!.rules!.map((r) => r.host)).toEqual([plan.hostname, 'shop.example.com', 'www.example.com']);
    for (const rule of m.ingress!.spec!.rules!) expect(rule.http!.paths[0]!.backend.service!.name).toBe(m.names.service);
    expect(m.ingress!.spec!.tls).toEqual([{ hosts: ['shop.example.com', 'www.example.com'], secretName: `${m.names.ingress}-tls` }]);
    // Without custom domains: no TLS section (the platform's own name is served as before).
    expect(workloadManifests(makePlan(), options).ingress!.spec!.tls).toBeUndefined();
  });

  it('leaves the Host header out without a health check host, the Ingress without a class, the pull secret when there is none', () => {
    const plan = makePlan({ healthCheckHost: null });
    const m = workloadManifests(plan, { namespacePrefix: 'slipway-', ingressClass: null, hasPullSecret: false });
    const web = m.deployments.find((d) => d.processType === 'web')!.manifest.spec!.template.spec!;
    expect(web.containers[0]!.readinessProbe!.httpGet).toEqual({ path: '/health', port: 'http' });
    expect(web.imagePullSecrets).toBeUndefined();
    expect(m.ingress).toBeNull();
    const noWeb = workloadManifests(makePlan({ formation: { worker: 2 } }), options);
    expect(noWeb.service).toBeNull();
    expect(noWeb.deployments.map((d) => d.processType)).toEqual(['worker']);
  });

  it('keeps every name a valid DNS label of at most 63 characters, distinct for long slugs', () => {
    const long = 'a-very-long-slug-that-goes-on-and-on-and-on-well-past-the-limit';
    const plan = makePlan({ orgSlug: long, projectSlug: long, appSlug: `${long}-x`, envSlug: 'production' });
    const other = makePlan({ orgSlug: long, projectSlug: long, appSlug: `${long}-y`, envSlug: 'production' });
    const names = workloadNames(plan, 'slipway-');
    const otherNames = workloadNames(other, 'slipway-');
    const all = [
      names.namespace,
      names.deployment('web'),
      names.deployment('worker'),
      names.service,
      names.ingress,
      names.configSecret(12),
      names.pullSecret,
      names.job('release', plan.deploymentId),
      names.container('clock_tick'),
    ];
    for (const name of all) {
      expect(name.length).toBeLessThanOrEqual(MAX_NAME);
      expect(name).toMatch(DNS_LABEL);
    }
    expect(names.deployment('web')).not.toBe(otherNames.deployment('web'));
    expect(names.deployment('web')).not.toBe(names.deployment('worker'));
    expect(names.service).toMatch(/^[a-z]/);
    expect(workloadNames(makePlan({ projectSlug: '9lives' }), 'slipway-').service).toMatch(/^[a-z]/);
    expect(dnsLabel('Web_Server')).toBe('web-server');
    const m = workloadManifests(plan, options);
    for (const { manifest } of m.deployments) new Deployment(manifest as never).validate();
    new Job(jobManifest(plan, 'release', options, 60) as never).validate();
  });

  it('never gives two applications of one organization, or two process types, the same object or selector', () => {
    // Slugs hold dashes: shop-api/web and shop/api-web once both read shop-api-web-production-*.
    const a = makePlan({ projectSlug: 'shop-api', appSlug: 'web' });
    const b = makePlan({ projectSlug: 'shop', appSlug: 'api-web' });
    // ... and an environment slug can read like another environment plus a process type.
    const c = makePlan({ projectSlug: 'shop', appSlug: 'api', envSlug: 'production-worker' });
    const d = makePlan({ projectSlug: 'shop', appSlug: 'api', envSlug: 'production' });
    const all = (plan: ReturnType<typeof makePlan>, types: string[]) => {
      const n = workloadNames(plan, 'slipway-');
      return [
        `Service/${n.service}`,
        `Ingress/${n.ingress}`,
        `Secret/${n.pullSecret}`,
        `Secret/${n.configSecret(1)}`,
        ...types.map((t) => `Deployment/${n.deployment(t)}`),
        ...types.map((t) => `Job/${n.job(t, 'same-id')}`),
      ];
    };
    const objects = [...all(a, ['web']), ...all(b, ['web']), ...all(c, ['web']), ...all(d, ['worker-web', 'web'])];
    expect(new Set(objects).size).toBe(objects.length);
    for (const object of objects) expect(object.split('/')[1]).toMatch(DNS_LABEL);
    expect(workloadNames(a, 'slipway-').namespace).toBe(workloadNames(b, 'slipway-').namespace);

    // Procfile types may be my_worker and my-worker (both valid): two Deployments, two selectors.
    const plan = makePlan({
      processes: {
        web: { cmd: 'web', env: {} },
        my_worker: { cmd: 'a', env: {} },
        'my-worker': { cmd: 'b', env: {} },
        'tail-': { cmd: 'c', env: {} },
        tail: { cmd: 'd', env: {} },
      },
      formation: { web: 1, my_worker: 1, 'my-worker': 1, 'tail-': 1, tail: 1 },
    });
    const m = workloadManifests(plan, options);
    const deploymentNames = m.deployments.map((x) => x.manifest.metadata!.name!);
    const selectors = m.deployments.map((x) => x.manifest.spec!.selector.matchLabels![LABEL.processType]!);
    expect(new Set(deploymentNames).size).toBe(5);
    expect(new Set(selectors).size).toBe(5);
    for (const { manifest } of m.deployments) new Deployment(manifest as never).validate();
    expect(processTypeLabel('my_worker')).toBe('my_worker');
    expect(processTypeLabel('web')).toBe('web');
    expect(processTypeLabel('tail-')).not.toBe('tail');
    expect(processTypeLabel('x'.repeat(63) + 'y')).toMatch(DNS_LABEL);
  });

  it('give a volume a PersistentVolumeClaim, mount it in its process type only, and deploy that type stop-then-start', () => {
    const volume = { id: '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b', name: 'uploads', processType: 'web', mountPath: '/data', sizeMiB: 2048 };
    const plan = { ...makePlan({ formation: { web: 1, worker: 1 } }), volumes: [volume] };
    const m = workloadManifests(plan, options);
    expect(m.volumeClaims).toHaveLength(1);
    const claim = m.volumeClaims[0]!;
    new PersistentVolumeClaim(claim as never).validate();
    expect(claim.metadata).toMatchObject({ name: `slipway-volume-${volume.id}`, namespace: m.names.namespace });
    expect(claim.spec).toEqual({ accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '2048Mi' } } });

    const web = m.deployments.find((d) => d.processType === 'web')!.manifest;
    const worker = m.deployments.find((d) => d.processType === 'worker')!.manifest;
    for (const d of [web, worker]) new Deployment(d as never).validate();
    expect(web.spec!.strategy).toEqual({ type: 'Recreate' });
    expect(web.spec!.template.spec!.volumes).toEqual([
      { name: 'volume-uploads', persistentVolumeClaim: { claimName: claim.metadata!.name } },
    ]);
    expect(web.spec!.template.spec!.containers[0]!.volumeMounts).toEqual([{ name: 'volume-uploads', mountPath: '/data' }]);
    expect(podSecurityViolations(web.spec!.template.spec! as never, 'restricted')).toEqual([]);
    // The worker neither mounts it nor gives up its rolling update; the release Job runs without it,
    // a one-off run of web mounts it (on the instance's node when one runs).
    expect(worker.spec!.strategy!.type).toBe('RollingUpdate');
    expect(worker.spec!.template.spec!.volumes).toBeUndefined();
    expect(jobManifest(plan, 'release', options, 60).spec!.template.spec!.volumes).toBeUndefined();
    const run = jobManifest(plan, 'web', options, 60, 'node-a').spec!.template.spec!;
    expect(run.volumes).toEqual(web.spec!.template.spec!.volumes);
    expect(run.containers[0]!.volumeMounts).toEqual([{ name: 'volume-uploads', mountPath: '/data' }]);
    expect(run.affinity!.nodeAffinity!.requiredDuringSchedulingIgnoredDuringExecution!.nodeSelectorTerms[0]!.matchFields).toEqual([
      { key: 'metadata.name', operator: 'In', values: ['node-a'] },
    ]);
    expect(podSecurityViolations(run as never, 'restricted')).toEqual([]);
    expect(jobManifest(plan, 'web', options, 60).spec!.template.spec!.affinity).toBeUndefined();
  });
});
