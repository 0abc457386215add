/**
 * deploy/kubernetes: every YAML file parses and every object validates against the
 * Kubernetes schemas (kubernetes-models); the kustomization lists the manifests; the RBAC
 * rules grant what RUNTIME=kubernetes needs and nothing else; the API and worker
 * Deployments run the right roles, probe an endpoint the API really serves publicly, and
 * set only configuration variables Slipway knows, with values it accepts.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Deployment } from 'kubernetes-models/apps/v1';
import { ClusterRole, ClusterRoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import { ConfigMap, Namespace, Secret, Service, ServiceAccount } from 'kubernetes-models/v1';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { loadConfig } from '../../src/config.js';
import { createHarness, type Harness } from '../helpers/harness.js';

const ROOT = resolve(import.meta.dirname, '../..');
const DIR = join(ROOT, 'deploy/kubernetes');
const KUSTOMIZATION = 'kustomization.yaml';
/** Not applied by the kustomization: it holds placeholders for the operator's real Secret. */
const EXAMPLES = ['secret.example.yaml'];

/** The models by `apiVersion/kind`: an object of any other kind fails the test. */
const MODELS: Record<string, new (data: any) => { validate(): void }> = {
  'v1/Namespace': Namespace,
  'v1/ServiceAccount': ServiceAccount,
  'v1/Secret': Secret,
  'v1/ConfigMap': ConfigMap,
  'v1/Service': Service,
  'apps/v1/Deployment': Deployment,
  'rbac.authorization.k8s.io/v1/ClusterRole': ClusterRole,
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': ClusterRoleBinding,
};

interface Manifest {
  file: string;
  object: any;
}

function readManifests(): { manifests: Manifest[]; kustomization: any } {
  const manifests: Manifest[] = [];
  let kustomization: any = null;
  for (const file of readdirSync(DIR)
    .filter((f) => /\.ya?ml$/.test(f))
    .sort()) {
    const docs = parseAllDocuments(readFileSync(join(DIR, file), 'utf8'));
    for (const doc of Array.isArray(docs) ? docs : [docs]) {
      expect(
        doc.errors.map((e) => e.message),
        `${file} parses`,
      ).toEqual([]);
      const object = doc.toJS();
      if (object === null) continue;
      if (file === KUSTOMIZATION) kustomization = object;
      else manifests.push({ file, object });
    }
  }
  return { manifests, kustomization };
}

const { manifests, kustomization } = readManifests();
const ofKind = (kind: string) => manifests.filter((m) => m.object.kind === kind).map((m) => m.object);
const deployment = (component: string) => ofKind('Deployment').find((d) => d.metadata.labels['app.kubernetes.io/component'] === component);
const envOf = (container: any) => Object.fromEntries((container.env ?? []).map((e: { name: string; value: string }) => [e.name, e.value]));

describe('deploy/kubernetes manifests', () => {
  it('parse, and every object is a valid Kubernetes object of a known kind', () => {
    expect(manifests.length).toBeGreaterThanOrEqual(9);
    for (const { file, object } of manifests) {
      const Model = MODELS[`${object.apiVersion}/${object.kind}`];
      expect(Model, `${file}: ${object.apiVersion} ${object.kind} is expected here`).toBeDefined();
      expect(() => new Model!(object).validate(), `${file}: ${object.kind} ${object.metadata?.name}`).not.toThrow();
    }
  });

  it('are all applied by the kustomization, except the Secret example', () => {
    expect(kustomization).toMatchObject({ apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization', namespace: 'slipway' });
    const files = [...new Set(manifests.map((m) => m.file))];
    expect([...kustomization.resources].sort()).toEqual(files.filter((f) => !EXAMPLES.includes(f)).sort());
    for (const f of kustomization.resources) expect(existsSync(join(DIR, f)), f).toBe(true);
    // Namespaced objects live in Slipway's namespace; the image is set in one place.
    for (const { object } of manifests) {
      if (!['Namespace', 'ClusterRole', 'ClusterRoleBinding'].includes(object.kind))
        expect(object.metadata.namespace, object.metadata.name).toBe('slipway');
    }
    expect(kustomization.images).toEqual([expect.objectContaining({ name: 'slipway' })]);
  });

  it('grant the runtime exactly the access RUNTIME=kubernetes needs', () => {
    const [role] = ofKind('ClusterRole');
    const READ = ['get', 'list', 'watch'];
    const MANAGE = [...READ, 'create', 'update', 'patch', 'delete'];
    // Objects are written by server-side apply (patch) and read by get/list/watch.
    const needed: Array<[group: string, resource: string, verbs: string[]]> = [
      ['', 'namespaces', [...READ, 'create', 'patch']],
      ['', 'secrets', MANAGE],
      ['', 'services', MANAGE],
      ['apps', 'deployments', MANAGE],
      ['apps', 'deployments/scale', ['get', 'patch']],
      ['batch', 'jobs', MANAGE],
      ['', 'pods', READ],
      ['', 'pods/log', ['get']],
      ['', 'events', READ],
      ['networking.k8s.io', 'ingresses', MANAGE],
      ['metrics.k8s.io', 'pods', ['get', 'list']],
      ['networking.k8s.io', 'networkpolicies', [...READ, 'create', 'patch', 'delete']],
      // exec (issue 33) and the add-ons and volumes (issue 31).
      ['', 'pods/exec', ['get', 'create']],
      ['', 'persistentvolumeclaims', MANAGE],
      ['apps', 'statefulsets', MANAGE],
      ['postgresql.cnpg.io', 'clusters', MANAGE],
      ['postgresql.cnpg.io', 'scheduledbackups', MANAGE],
    ];
    /** Verbs that would be more than the runtime needs. */
    const excess: Array<[group: string, resource: string, verbs: string[]]> = [
      ['', 'namespaces', ['delete']],
      ['', 'pods', ['create', 'update', 'patch', 'delete']],
      ['', 'events', ['create', 'update', 'patch', 'delete']],
    ];
    const granted = (group: string, resource: string) =>
      new Set(role.rules.filter((r: any) => r.apiGroups.includes(group) && r.resources.includes(resource)).flatMap((r: any) => r.verbs));
    for (const [group, resource, verbs] of needed) {
      const have = granted(group, resource);
      for (const verb of verbs) expect(have.has(verb), `${verb} ${group || 'core'}/${resource}`).toBe(true);
    }
    for (const [group, resource, verbs] of excess) {
      const have = granted(group, resource);
      for (const verb of verbs) expect(have.has(verb), `no ${verb} on ${group || 'core'}/${resource}`).toBe(false);
    }
    // No wildcards, and no resource beyond the list.
    const allowed = new Set(needed.map(([g, r]) => `${g}/${r}`));
    for (const rule of role.rules) {
      for (const field of [rule.apiGroups, rule.resources, rule.verbs]) expect(field).not.toContain('*');
      for (const g of rule.apiGroups) for (const r of rule.resources) expect(allowed.has(`${g}/${r}`), `${g || 'core'}/${r}`).toBe(true);
      if (rule.resources.includes('events') || rule.apiGroups.includes('metrics.k8s.io')) {
        for (const verb of rule.verbs) expect(READ, `${rule.resources} verbs are read-only`).toContain(verb);
      }
    }
    // Bound to the service account the workers run as.
    const [binding] = ofKind('ClusterRoleBinding');
    const [account] = ofKind('ServiceAccount');
    expect(binding.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role.metadata.name });
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: account.metadata.name, namespace: account.metadata.namespace }]);
    expect(deployment('worker').spec.template.spec.serviceAccountName).toBe(account.metadata.name);
  });

  it('run two API replicas and two kubernetes-runtime worker replicas from one Secret and ConfigMap', () => {
    const api = deployment('api');
    const worker = deployment('worker');
    for (const [d, role] of [
      [api, 'api'],
      [worker, 'worker'],
    ] as const) {
      expect(d.spec.replicas, role).toBe(2);
      expect(d.spec.template.metadata.labels).toMatchObject(d.spec.selector.matchLabels);
      const [container] = d.spec.template.spec.containers;
      expect(envOf(container).SLIPWAY_ROLE).toBe(role);
      expect(container.envFrom).toEqual(
        expect.arrayContaining([{ configMapRef: { name: 'slipway' } }, { secretRef: { name: 'slipway' } }]),
      );
    }
    expect(envOf(worker.spec.template.spec.containers[0]).RUNTIME).toBe('kubernetes');

    // The Service reaches the API's named port; the example Secret names the same Secret and
    // holds placeholders only.
    const [service] = ofKind('Service');
    const apiContainer = api.spec.template.spec.containers[0];
    expect(service.spec.selector).toEqual(api.spec.selector.matchLabels);
    expect(apiContainer.ports.map((p: { name: string }) => p.name)).toContain(service.spec.ports[0].targetPort);
    const [secret] = ofKind('Secret');
    expect(secret.metadata.name).toBe('slipway');
    expect(Object.keys(secret.stringData)).toEqual(expect.arrayContaining(['DATABASE_URL', 'SECRET_KEY']));
    for (const value of [
      secret.stringData.SECRET_KEY,
      secret.stringData.ADMIN_PASSWORD,
      new URL(secret.stringData.DATABASE_URL).password,
    ]) {
      expect(value).toMatch(/CHANGE-ME/);
    }
  });

  it('set only configuration variables Slipway knows, with values it accepts', () => {
    const configSource = readFileSync(join(ROOT, 'src/config.ts'), 'utf8');
    const [configMap] = ofKind('ConfigMap');
    const [secret] = ofKind('Secret');
    for (const role of ['api', 'worker']) {
      const env = { ...configMap.data, ...secret.stringData, ...envOf(deployment(role).spec.template.spec.containers[0]) };
      for (const name of Object.keys(env))
        expect(configSource, `${name} is read by src/config.ts`).toMatch(new RegExp(`\\b${name}: Type\\.`));
      const config = loadConfig(env);
      expect(config.SLIPWAY_ROLE).toBe(role);
      expect(config.RUNTIME).toBe('kubernetes');
    }
  });

  describe('probes', () => {
    let h: Harness;
    beforeAll(async () => {
      h = await createHarness();
    });
    afterAll(async () => {
      await h?.close();
    });

    it('of the API ask an endpoint it serves without credentials, on its container port', async () => {
      const container = deployment('api').spec.template.spec.containers[0];
      const portNames = container.ports.map((p: { name: string }) => p.name);
      expect(Number(envOf(container).PORT)).toBe(container.ports[0].containerPort);
      for (const probe of [container.readinessProbe, container.livenessProbe]) {
        expect(probe?.httpGet, 'an HTTP probe').toBeDefined();
        expect(portNames).toContain(probe.httpGet.port);
        const res = await h.app.inject({ method: 'GET', url: probe.httpGet.path });
        expect(res.statusCode, probe.httpGet.path).toBe(200);
        expect(res.json()).toMatchObject({ status: 'ok', database: 'ok', components: { database: 'ok' } });
      }
    });
  });
});

describe('deploy/Dockerfile', () => {
  it('builds Slipway on Node 20 with npm ci and starts it with npm start', () => {
    const text = readFileSync(join(ROOT, 'deploy/Dockerfile'), 'utf8');
    expect(text).toMatch(/^FROM node:20[-\w.]*$/m);
    expect(text).toMatch(/^RUN npm ci\b/m);
    expect(text).toMatch(/^CMD \["npm", "start"\]$/m);
    // Everything `npm start` runs is copied in.
    for (const path of ['package.json', 'package-lock.json', 'tsconfig.json', 'src'])
      expect(text).toMatch(new RegExp(`^COPY .*\\b${path.replace('.', '\\.')}\\b`, 'm'));
  });
});
