/**
 * Add-ons on Kubernetes (issue 31): the objects a Postgres and a Redis add-on become, checked
 * against the real schemas: the core kinds with kubernetes-models, CloudNativePG's Cluster and
 * ScheduledBackup with the openAPIV3Schema of its CRDs (test/kubernetes/crds/cnpg-v1.json, taken
 * from the upstream repository: see its `note`), plus a check that every field we set is declared
 * there (an API server prunes undeclared fields of a custom resource without a word).
 */
import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { StatefulSet } from 'kubernetes-models/apps/v1';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { Secret, Service } from 'kubernetes-models/v1';
import { ObjectSerializer } from '@kubernetes/client-node/dist/gen/models/ObjectSerializer.js';
import { findPlan } from '../../src/platform/addons/plans.js';
import {
  addonManifests,
  addonObjectNames,
  backupSchedule,
  type AddonObjectStore,
  type AddonTarget,
} from '../../src/platform/runtime/kubernetes/addon-manifests.js';
import { backupManifest, objectStoreFromSettings, recoveryCluster } from '../../src/platform/runtime/kubernetes/addon-backups.js';
import { podSecurityViolations } from '../helpers/fake-kube-api.js';

const crds = JSON.parse(readFileSync(new URL('./crds/cnpg-v1.json', import.meta.url), 'utf8')) as Record<string, any>;
const ajv = new Ajv({ strict: false, validateFormats: false, allErrors: true });
const validators = {
  Cluster: ajv.compile(crds.Cluster),
  ScheduledBackup: ajv.compile(crds.ScheduledBackup),
  Backup: ajv.compile(crds.Backup),
};

/** Paths of `value` its schema does not declare (where it neither preserves unknown fields nor allows any key). */
function undeclared(value: unknown, schema: any, path = ''): string[] {
  if (!schema || schema['x-kubernetes-preserve-unknown-fields']) return [];
  if (Array.isArray(value)) return value.flatMap((v, i) => undeclared(v, schema.items, `${path}[${i}]`));
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([k, v]) => {
    if (path === '' && (k === 'metadata' || k === 'apiVersion' || k === 'kind')) return []; // ObjectMeta: the API server's own
    const declared = schema.properties?.[k] ?? (typeof schema.additionalProperties === 'object' ? schema.additionalProperties : null);
    if (!declared) return [`${path}.${k}`];
    return undeclared(v, declared, `${path}.${k}`);
  });
}

function expectValidCustomResource(object: any) {
  const validate = validators[object.kind as keyof typeof validators];
  expect(validate(object), JSON.stringify(validate.errors)).toBe(true);
  expect(undeclared(object, crds[object.kind])).toEqual([]);
}

const APP = '0190f0a0-0000-7000-8000-000000000001';
const ENV = '0190f0a0-0000-7000-8000-000000000002';
const target = (kind: 'postgres' | 'redis', over: Partial<AddonTarget> = {}): AddonTarget => ({
  id: '0190f0a0-0000-7000-8000-0000000000aa',
  name: 'Main DB',
  kind,
  plan: findPlan(kind, 'hobby')!,
  port: 15401,
  namespace: 'slipway-acme',
  credentials:
    kind === 'postgres'
      ? { user: 'app', password: 'pw-1', database: 'app', adminUser: 'slipway', adminPassword: 'pw-2' }
      : { user: 'default', password: 'pw-3' },
  attached: [{ applicationId: APP, environmentId: ENV }],
  stopped: false,
  ...over,
});
const store: AddonObjectStore = {
  destinationPath: 's3://backups/slipway/',
  endpointUrl: 'https://minio.example:9000',
  credentialsSecret: { name: 'addon-backups', accessKeyIdKey: 'ACCESS_KEY_ID', secretAccessKeyKey: 'SECRET_ACCESS_KEY' },
  retentionDays: 7,
};
const byKind = (objects: any[], kind: string) => objects.find((o) => o.kind === kind);

describe('Kubernetes add-on manifests', () => {
  it('makes a Postgres add-on a CloudNativePG Cluster (plan, owner, password Secret, object-store backups) and a ScheduledBackup, valid against their CRDs', () => {
    const t = target('postgres');
    const names = addonObjectNames(t);
    const objects = addonManifests(t, store, 24) as any[];
    expect(objects.map((o) => o.kind)).toEqual(['Secret', 'Cluster', 'ScheduledBackup', 'Service', 'NetworkPolicy']);
    const cluster = byKind(objects, 'Cluster');
    expectValidCustomResource(cluster);
    expect(cluster.spec).toMatchObject({
      instances: 1,
      storage: { size: '1Gi' },
      resources: { limits: { memory: '256Mi', cpu: '500m' }, requests: { memory: '256Mi' } },
      postgresql: { parameters: { max_connections: '20', shared_buffers: '16MB' } },
      bootstrap: { initdb: { database: 'app', owner: 'app', secret: { name: names.secret } } },
      backup: {
        retentionPolicy: '7d',
        barmanObjectStore: { destinationPath: `s3://backups/slipway/${t.id}`, endpointURL: 'https://minio.example:9000' },
      },
    });
    expect(cluster.spec.inheritedMetadata.labels['slipway.dev/addon-id']).toBe(t.id);
    const backup = byKind(objects, 'ScheduledBackup');
    expectValidCustomResource(backup);
    expect(backup.spec).toMatchObject({ schedule: '0 0 0 * * *', cluster: { name: names.base }, method: 'barmanObjectStore' });
    const secret = byKind(objects, 'Secret');
    new Secret(secret).validate();
    expect(secret).toMatchObject({ type: 'kubernetes.io/basic-auth', stringData: { username: 'app', password: 'pw-1' } });
    // The URL's host and port: the Service on the add-on's port, to the primary.
    const service = byKind(objects, 'Service');
    new Service(service).validate();
    expect(service.spec).toMatchObject({
      selector: { 'cnpg.io/cluster': names.base, 'cnpg.io/instanceRole': 'primary' },
      ports: [{ port: 15401, targetPort: 5432 }],
    });
    expect(names.host).toBe(`${names.base}.slipway-acme.svc.cluster.local`);
    expect(names.base).toMatch(/^addon-main-db-[0-9a-f]{6}$/);

    // Without an object store: no backup section, no ScheduledBackup; deleted: hibernated.
    const plain = addonManifests(target('postgres', { stopped: true }), null, 24) as any[];
    expect(plain.map((o) => o.kind)).toEqual(['Secret', 'Cluster', 'Service', 'NetworkPolicy']);
    expectValidCustomResource(byKind(plain, 'Cluster'));
    expect(byKind(plain, 'Cluster').spec.backup).toBeUndefined();
    expect(byKind(plain, 'Cluster').metadata.annotations).toEqual({ 'cnpg.io/hibernation': 'on' });
    expect([backupSchedule(6), backupSchedule(24), backupSchedule(72)]).toEqual(['0 0 */6 * * *', '0 0 0 * * *', '0 0 0 */3 * *']);
  });

  it('makes backups, restores and drills CloudNativePG objects valid against its CRDs: a Backup, a Cluster recovered from the source’s store', () => {
    const settings = {
      BACKUP_S3_ENDPOINT: 'https://s3.example.test',
      BACKUP_S3_BUCKET: 'b',
      BACKUP_S3_REGION: 'eu-west-1',
      BACKUP_S3_PREFIX: 'p/',
      BACKUP_S3_ACCESS_KEY_ID: 'id',
      BACKUP_S3_SECRET_ACCESS_KEY: 'k3y-v4lue',
      ADDONS_BACKUP_RETENTION_DAYS: 3,
    };
    expect(objectStoreFromSettings({ ...settings, BACKUP_S3_SECRET_ACCESS_KEY: undefined })).toBeNull();
    const s3 = objectStoreFromSettings(settings)!;
    const source = target('postgres');
    const names = addonObjectNames(source);
    // The keys' Secret comes before the Cluster reading it; nothing else holds them.
    const objects = addonManifests(source, s3, 24) as any[];
    expect(objects.map((o) => o.kind)).toEqual(['Secret', 'Secret', 'Cluster', 'ScheduledBackup', 'Service', 'NetworkPolicy']);
    expect(objects[1].stringData).toEqual({ ACCESS_KEY_ID: 'id', SECRET_ACCESS_KEY: 'k3y-v4lue', REGION: 'eu-west-1' });
    expect(JSON.stringify(objects.filter((o) => o !== objects[1]))).not.toContain('k3y-v4lue');
    expectValidCustomResource(byKind(objects, 'Cluster'));

    expectValidCustomResource(backupManifest(source, names, `${names.base}-x`));
    const fork = target('postgres', { id: '0190f0a0-0000-7000-8000-0000000000bb', name: 'fork' });
    for (const recoveryTarget of [
      { backupID: '20261126T100000', targetImmediate: true as const },
      { targetName: 'slipway-1-v2' },
      { targetTime: '2026-11-26T10:00:00.000Z' },
    ]) {
      const cluster = recoveryCluster(fork, addonObjectNames(fork), { id: source.id, base: names.base }, s3, recoveryTarget, true) as any;
      expectValidCustomResource(cluster);
      expect(cluster.spec.bootstrap).toEqual({
        recovery: { source: 'origin', database: 'app', owner: 'app', secret: { name: addonObjectNames(fork).secret }, recoveryTarget },
      });
      expect(cluster.spec.externalClusters[0].barmanObjectStore).toMatchObject({
        destinationPath: `s3://b/p/${source.id}`,
        serverName: names.base,
      });
    }
    // A drill's scratch copy writes nothing to the store.
    const scratch = recoveryCluster(
      source,
      { ...names, base: `${names.base}-drill` },
      { id: source.id, base: names.base },
      s3,
      { targetName: 'x' },
      false,
    ) as any;
    expectValidCustomResource(scratch);
    expect(scratch.spec.backup).toBeUndefined();
  });

  it('makes a Redis add-on a StatefulSet (redis:7, password from the Secret, AOF, a claim) that passes the restricted Pod Security Standard', () => {
    const t = target('redis');
    const names = addonObjectNames(t);
    const objects = addonManifests(t, store, 24) as any[];
    expect(objects.map((o) => o.kind)).toEqual(['Secret', 'StatefulSet', 'Service', 'NetworkPolicy']);
    const set = byKind(objects, 'StatefulSet');
    new StatefulSet(set).validate();
    const container = set.spec.template.spec.containers[0];
    expect(container.image).toBe('redis:7');
    expect(container.args.join(' ')).toContain('--requirepass $(REDIS_PASSWORD) --appendonly yes --dir /data');
    expect(container.args.join(' ')).toContain('--maxmemory 48mb');
    expect(container.env).toEqual([{ name: 'REDIS_PASSWORD', valueFrom: { secretKeyRef: { name: names.secret, key: 'password' } } }]);
    expect(JSON.stringify(set)).not.toContain('pw-3');
    expect(set.spec.volumeClaimTemplates[0].spec.resources.requests.storage).toBe('1Gi');
    expect(podSecurityViolations(set.spec.template.spec, 'restricted')).toEqual([]);
    expect(byKind(objects, 'Service').spec.ports).toEqual([{ name: 'redis', port: 15401, targetPort: 6379, protocol: 'TCP' }]);
  });

  it('admits only the attached applications (and, for Postgres, the operator and its own instances); no attachment, no application rule', () => {
    for (const kind of ['postgres', 'redis'] as const) {
      const policy = ObjectSerializer.serialize(
        byKind(addonManifests(target(kind), null, 0) as any[], 'NetworkPolicy'),
        'V1NetworkPolicy',
        '',
      );
      new NetworkPolicy(policy).validate();
      expect(policy.spec.podSelector).toEqual({ matchLabels: { 'slipway.dev/addon-id': target(kind).id } });
      expect(policy.spec.ingress[0]).toEqual({
        from: [{ podSelector: { matchLabels: { 'slipway.dev/application-id': APP, 'slipway.dev/environment-id': ENV } } }],
        ports: [{ protocol: 'TCP', port: kind === 'postgres' ? 5432 : 6379 }],
      });
      const alone = ObjectSerializer.serialize(
        byKind(addonManifests(target(kind, { attached: [] }), null, 0) as any[], 'NetworkPolicy'),
        'V1NetworkPolicy',
        '',
      );
      // Every rule names its peers: a rule without `from` would admit every pod.
      for (const rule of alone.spec.ingress) expect(rule.from.length).toBeGreaterThan(0);
      expect(JSON.stringify(alone)).not.toContain('slipway.dev/application-id');
    }
  });
});
