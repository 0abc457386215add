/**
 * Fills the path parameters of every route in `app.routeTable` with real resources of one
 * organization (the "victim" world), for the tests that walk the whole route table
 * (access matrix, bad input, secret leaks).
 *
 * ROUTE AUTHORS: a route with a path parameter not listed in PARAM_FIXTURES fails those
 * tests; add a fixture below (a real id or slug in the world). A POST/PATCH route whose
 * body has required fields needs a valid example in SAMPLE_BODIES so the access check
 * reaches your authorization code instead of stopping at validation.
 */
import { randomInt } from 'node:crypto';
import { sql } from 'kysely';
import ssh2 from 'ssh2';
import { v7 as uuidv7 } from 'uuid';
import type { RouteEntry } from '../../src/app.js';
import { ConfigurationsRepository, ConfigurationsService } from '../../src/modules/configurations/index.js';
import { hashToken, newToken } from '../../src/platform/crypto/tokens.js';
import type { ConfigScope } from '../../src/platform/db/schema.js';
import type { Harness } from '../helpers/harness.js';
import { seedWorld, unique, type World } from './fixtures.js';

export interface RouteWorld extends World {
  environmentId: string;
  volumeName: string | null;
  /** A volume of a deleted application (no application or environment). */
  detachedVolumeId: string | null;
  alertRuleName: string | null;
  apiKeyId: string;
  teamSlug: string | null;
  imageId: string | null;
  releaseId: string | null;
  deploymentId: string | null;
  envDeployId: string | null;
  runId: string | null;
  domainId: string | null;
  webhookId: string | null;
  webhookDeliveryId: string | null;
  /** A cron entry of the application (its name) and the process type with an autoscaling policy. */
  cronName: string | null;
  autoscaledType: string | null;
  /** A GitHub App installation linked to the organization. */
  installationId: number | null;
  /** An add-on of the organization (its name; no server runs in these harnesses) and its attachment to the app. */
  addonName: string | null;
  addonAttachmentId: string | null;
  /** A Slack notification channel of the organization. */
  notificationChannelId: string | null;
  /** An open invitation to the organization (its id, and the token of its link). */
  invitation: { id: string; token: string } | null;
  /** An exec session the owner opened (never attached). */
  execSessionId: string | null;
  /** A log drain of the organization. */
  logDrainId: string | null;
  /** One variable per configuration scope (ids). */
  scopedVars: { organization: string; project: string; environment: string; team: string | null };
}

async function tableExists(h: Harness, table: string): Promise<boolean> {
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from information_schema.tables where table_schema = current_schema() and table_name = ${table}`.execute(
    h.ctx.db,
  );
  return (rows[0]?.n ?? 0) > 0;
}

/**
 * Inserts a row with the given values, filling every other NOT NULL column without a
 * default by its type: the pipeline's tables, seeded without running a pipeline.
 */
export async function insertRow(h: Harness, table: string, values: Record<string, unknown>): Promise<string> {
  const { rows: columns } = await sql<{ column_name: string; data_type: string; is_nullable: string; column_default: string | null }>`
    select column_name, data_type, is_nullable, column_default from information_schema.columns
    where table_schema = current_schema() and table_name = ${table}`.execute(h.ctx.db);
  const row: Record<string, unknown> = { ...values };
  for (const c of columns) {
    if (c.column_name in row || c.is_nullable === 'YES' || c.column_default !== null) continue;
    if (c.column_name === 'id' || c.data_type === 'uuid') row[c.column_name] = uuidv7();
    else if (/int|numeric/.test(c.data_type)) row[c.column_name] = 1;
    else if (c.data_type === 'boolean') row[c.column_name] = false;
    else if (c.data_type.startsWith('json')) row[c.column_name] = '{}';
    else if (c.data_type.startsWith('timestamp')) row[c.column_name] = new Date();
    else row[c.column_name] = 'x';
  }
  const names = Object.keys(row);
  await sql`insert into ${sql.table(table)} (${sql.join(names.map((n) => sql.ref(n)))}) values (${sql.join(names.map((n) => row[n]))})`.execute(
    h.ctx.db,
  );
  return String(row.id);
}

/** The issuer PARAM_FIXTURES.issuer names, present: single sign-on's issuers are the site's (several worlds may share a database). */
export async function ensureFixtureIssuer(h: Harness) {
  await h.ctx.db
    .insertInto('oidc_issuers')
    .values({
      name: 'fixture-issuer',
      display_name: 'Fixture',
      discovery_url: 'https://id.example.org',
      client_id: 'slipway',
      client_secret_sealed: h.ctx.secrets.seal('fixture-secret'),
    })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
}

/** A world with one of everything a route can name, in one organization. */
export async function seedRouteWorld(h: Harness): Promise<RouteWorld> {
  const w = await seedWorld(h);
  const env = await h.ctx.db
    .selectFrom('environments')
    .select('id')
    .where('project_id', '=', w.project.id)
    .where('slug', '=', 'production')
    .executeTakeFirstOrThrow();
  const key = await h.ctx.db.selectFrom('api_keys').select('id').where('user_id', '=', w.owner.id).executeTakeFirstOrThrow();
  const base = { application_id: w.app.id, environment_id: env.id };

  let teamSlug: string | null = null;
  let teamId: string | null = null;
  if (await tableExists(h, 'teams')) {
    teamSlug = unique('team');
    teamId = await insertRow(h, 'teams', { id: uuidv7(), organization_id: w.org.id, name: teamSlug, slug: teamSlug });
  }
  const config = new ConfigurationsService(h.ctx.db, new ConfigurationsRepository(h.ctx.db), h.ctx.secrets);
  const varAt = async (scope: ConfigScope, scopeId: string) =>
    (await config.create({ scope, scopeId }, { name: `SCOPED_${scope.toUpperCase()}`, value: `${scope}-value` })).id;
  const scopedVars = {
    organization: await varAt('organization', w.org.id),
    project: await varAt('project', w.project.id),
    environment: await varAt('environment', env.id),
    team: teamId ? await varAt('team', teamId) : null,
  };
  const imageId = (await tableExists(h, 'images'))
    ? await insertRow(h, 'images', {
        id: uuidv7(),
        application_id: w.app.id,
        version: 1,
        repository_name: `${w.org.slug}/${w.project.slug}/${w.app.slug}`,
      })
    : null;
  const releaseId =
    imageId && (await tableExists(h, 'releases'))
      ? await insertRow(h, 'releases', { id: uuidv7(), ...base, version: 1, image_ref: imageId })
      : null;
  const deploymentId =
    releaseId && (await tableExists(h, 'deployments'))
      ? await insertRow(h, 'deployments', { id: uuidv7(), ...base, release_id: releaseId })
      : null;
  // The environments helper's deploy records: whichever table name it chose.
  let envDeployId: string | null = null;
  for (const table of ['environment_deploys', 'env_deploys']) {
    if (await tableExists(h, table)) {
      envDeployId = await insertRow(h, table, { id: uuidv7(), environment_id: env.id });
      break;
    }
  }
  const runId =
    releaseId && (await tableExists(h, 'one_off_runs'))
      ? await insertRow(h, 'one_off_runs', {
          id: uuidv7(),
          ...base,
          release_id: releaseId,
          command: 'true',
          process_type: 'web',
          timeout_seconds: 60,
        })
      : null;
  const domainId = (await tableExists(h, 'domains'))
    ? await insertRow(h, 'domains', {
        id: uuidv7(),
        ...base,
        hostname: `${unique('d')}.example.com`,
        route_hostname: 'x.localhost',
        verification_token: 'x',
      })
    : null;
  const webhookId = (await tableExists(h, 'webhooks'))
    ? await insertRow(h, 'webhooks', {
        id: uuidv7(),
        organization_id: w.org.id,
        url: 'http://127.0.0.1:9/hook',
        events: ['deployment.succeeded'],
        secret_sealed: h.ctx.secrets.seal('whsec_fixture'),
      })
    : null;
  const webhookDeliveryId = webhookId
    ? await insertRow(h, 'webhook_deliveries', { id: uuidv7(), webhook_id: webhookId, event: 'deployment.succeeded', payload: '{}' })
    : null;
  const cronName = (await tableExists(h, 'cron_entries'))
    ? (
        await h.ctx.db
          .insertInto('cron_entries')
          .values({ id: uuidv7(), ...base, name: 'nightly', schedule: '0 3 * * *', command: 'true', timeout_seconds: 60 })
          .returning('name')
          .executeTakeFirstOrThrow()
      ).name
    : null;
  const autoscaledType = (await tableExists(h, 'autoscale_policies'))
    ? (
        await h.ctx.db
          .insertInto('autoscale_policies')
          .values({
            id: uuidv7(),
            ...base,
            process_type: 'web',
            min_count: 1,
            max_count: 2,
            target_cpu_percent: 80,
            target_rps: null,
            cooldown_seconds: 60,
          })
          .returning('process_type')
          .executeTakeFirstOrThrow()
      ).process_type
    : null;
  // A guard of the application's production environment, so its GET answers 200.
  if (await tableExists(h, 'application_guards')) {
    await h.ctx.db
      .insertInto('application_guards')
      .values({ ...base, window_seconds: 300, max_error_ratio: 0.5, max_p95_factor: null, max_restarts: null, min_requests: 20 })
      .execute();
  }
  // Installation ids are GitHub's: one per world, as a harness may seed several worlds.
  const installationId = (await tableExists(h, 'github_installation_links')) ? randomInt(1, 2 ** 31) : null;
  if (installationId !== null)
    await h.ctx.db
      .insertInto('github_installation_links')
      .values({ installation_id: installationId, organization_id: w.org.id, linked_by: w.owner.id, linked_via: 'admin' })
      .execute();
  const addonName = (await tableExists(h, 'addons')) ? unique('addon') : null;
  const addonId = addonName
    ? await insertRow(h, 'addons', {
        id: uuidv7(),
        organization_id: w.org.id,
        name: addonName,
        kind: 'postgres',
        plan: 'hobby',
        port: randomInt(20_000, 2 ** 31 - 1),
        credentials_sealed: h.ctx.secrets.seal('{"user":"app","password":"addon-fixture-password"}'),
      })
    : null;
  const addonAttachmentId = addonId
    ? await insertRow(h, 'addon_attachments', { id: uuidv7(), addon_id: addonId, ...base, variable: 'DATABASE_URL' })
    : null;
  // A Redis add-on too, so Ancla's `cache` routes of the app answer (no server: a flush is 409).
  if (addonId) {
    const redisId = await insertRow(h, 'addons', {
      id: uuidv7(),
      organization_id: w.org.id,
      name: unique('cache'),
      kind: 'redis',
      plan: 'hobby',
      port: randomInt(20_000, 2 ** 31 - 1),
      credentials_sealed: h.ctx.secrets.seal('{"user":"default","password":"addon-fixture-password"}'),
    });
    await insertRow(h, 'addon_attachments', { id: uuidv7(), addon_id: redisId, ...base, variable: 'REDIS_URL' });
  }
  const notificationChannelId = (await tableExists(h, 'notification_channels'))
    ? await insertRow(h, 'notification_channels', {
        id: uuidv7(),
        organization_id: w.org.id,
        kind: 'slack',
        name: 'slack',
        url_sealed: h.ctx.secrets.seal('https://hooks.slack.example/services/T0/B0/fixture'),
        url_hint: 'hooks.slack.example/…ture',
        events: ['deployment.succeeded'],
      })
    : null;
  let invitation: RouteWorld['invitation'] = null;
  if (await tableExists(h, 'invitations')) {
    const token = newToken('inv');
    const id = await insertRow(h, 'invitations', {
      id: uuidv7(),
      organization_id: w.org.id,
      email: `${unique('invitee')}@example.com`,
      role: 'viewer',
      token_hash: hashToken(token),
      expires_at: new Date(Date.now() + 3600_000),
    });
    invitation = { id, token };
  }
  const execSessionId = (await tableExists(h, 'exec_sessions'))
    ? await insertRow(h, 'exec_sessions', { id: uuidv7(), ...base, instance_id: uuidv7(), instance_name: 'web.1', user_id: w.owner.id })
    : null;
  if (await tableExists(h, 'oidc_issuers')) await ensureFixtureIssuer(h);
  const logDrainId = (await tableExists(h, 'log_drains'))
    ? await insertRow(h, 'log_drains', {
        id: uuidv7(),
        organization_id: w.org.id,
        kind: 'syslog',
        name: 'syslog',
        url_sealed: h.ctx.secrets.seal('syslog+tls://logs.example.com:6514'),
        url_hint: 'syslog+tls://logs.example.com:6514',
        sources: ['runtime'],
      })
    : null;
  const alertRuleName = (await tableExists(h, 'alert_rules')) ? unique('rule') : null;
  if (alertRuleName)
    await insertRow(h, 'alert_rules', {
      id: uuidv7(),
      organization_id: w.org.id,
      name: alertRuleName,
      metric: 'error_rate',
      threshold: 0.5,
      window_seconds: 300,
    });
  const volumeName = (await tableExists(h, 'volumes')) ? unique('vol') : null;
  if (volumeName)
    await insertRow(h, 'volumes', {
      id: uuidv7(),
      organization_id: w.org.id,
      ...base,
      name: volumeName,
      mount_path: '/data',
      // Not web: a volume limits its process type to one instance, and the route walks scale web.
      process_type: 'fixture',
      size_mib: 16,
    });
  const detachedVolumeId = volumeName
    ? await insertRow(h, 'volumes', {
        id: uuidv7(),
        organization_id: w.org.id,
        application_id: null,
        environment_id: null,
        name: unique('gone'),
        mount_path: '/detached',
        process_type: 'fixture',
        size_mib: 16,
      })
    : null;
  return {
    ...w,
    volumeName,
    detachedVolumeId,
    alertRuleName,
    execSessionId,
    notificationChannelId,
    logDrainId,
    invitation,
    addonName,
    addonAttachmentId,
    installationId,
    cronName,
    autoscaledType,
    environmentId: env.id,
    webhookId,
    webhookDeliveryId,
    apiKeyId: key.id,
    teamSlug,
    scopedVars,
    imageId,
    releaseId,
    deploymentId,
    envDeployId,
    runId,
    domainId,
  };
}

type Fixture = (w: RouteWorld, route: RouteEntry) => string | null;

const need = (value: string | null, what: string) => {
  if (value === null) throw new Error(`no ${what} could be seeded: extend seedRouteWorld in test/control-plane/route-fixtures.ts`);
  return value;
};

/** Path parameter name → a real value in the world. */
export const PARAM_FIXTURES: Record<string, Fixture> = {
  org_slug: (w) => w.org.slug,
  workspace: (w) => w.org.slug,
  project_slug: (w) => w.project.slug,
  project: (w) => w.project.slug,
  app_slug: (w) => w.app.slug,
  service: (w) => w.app.slug,
  application_id: (w) => w.app.id,
  project_id: (w) => w.project.id,
  // A variable of the scope the route addresses.
  config_id: (w, route) => {
    if (route.url.includes('/services/')) return w.plainVar.id;
    if (route.url.includes('/envs/')) return w.scopedVars.environment;
    if (route.url.includes('/teams/')) return need(w.scopedVars.team, 'team variable');
    if (route.url.includes('/projects/')) return w.scopedVars.project;
    if (route.url.startsWith('/v1/workspaces/')) return w.scopedVars.organization;
    return w.plainVar.id;
  },
  user_id: (w) => w.owner.id,
  env: () => 'production',
  team: (w) => need(w.teamSlug, 'team'),
  image_id: (w) => need(w.imageId, 'image'),
  // A build's version number (Ancla's builds routes): the world's image is its application's first.
  version: (w) => need(w.imageId, 'image') && '1',
  release_id: (w) => need(w.releaseId, 'release'),
  deployment_id: (w) => need(w.deploymentId, 'deployment'),
  deploy_id: (w) => need(w.envDeployId, 'environment deploy'),
  run_id: (w) => need(w.runId, 'one-off run'),
  // exec: no instance runs in these worlds (opening answers 409); the owner's session (never attached here).
  instance: () => 'web.1',
  session_id: (w) => need(w.execSessionId, 'exec session'),
  // SSH keys are the caller's own (/users/me): no world's key is reachable through another user.
  key_id: () => uuidv7(),
  domain_id: (w) => need(w.domainId, 'domain'),
  webhook_id: (w) => need(w.webhookId, 'webhook'),
  delivery_id: (w) => need(w.webhookDeliveryId, 'webhook delivery'),
  name: (w) => need(w.cronName, 'cron entry'),
  process_type: (w) => need(w.autoscaledType, 'autoscaling policy'),
  addon: (w) => need(w.addonName, 'add-on'),
  volume: (w) => need(w.volumeName, 'volume'),
  volume_id: (w) => need(w.detachedVolumeId, 'detached volume'),
  rule: (w) => need(w.alertRuleName, 'alert rule'),
  attachment_id: (w) => need(w.addonAttachmentId, 'add-on attachment'),
  channel_id: (w) => need(w.notificationChannelId, 'notification channel'),
  drain_id: (w) => need(w.logDrainId, 'log drain'),
  invitation_id: (w) => need(w.invitation?.id ?? null, 'invitation'),
  token: (w) => need(w.invitation?.token ?? null, 'invitation'),
  installation_id: (w) => need(w.installationId === null ? null : String(w.installationId), 'GitHub App installation link'),
  // Single sign-on's issuers are the site's, not the world's: their routes are site administrators' (403 to members before any lookup).
  issuer: () => 'fixture-issuer',
  mapping_id: () => '01900000-0000-7000-8000-000000000000',
  // `id` means what the route's first segment names.
  id: (w, route) => {
    const [, , segment, sub] = route.url.split('/');
    if (segment === 'auth' && sub === 'api-keys') return w.apiKeyId;
    if (segment === 'images') return need(w.imageId, 'image');
    if (segment === 'releases') return need(w.releaseId, 'release');
    if (segment === 'deployments') return need(w.deploymentId, 'deployment');
    throw new Error(
      `route ${route.method} ${route.url}: ':id' is ambiguous here; add a case to PARAM_FIXTURES.id in test/control-plane/route-fixtures.ts`,
    );
  },
};

export function paramsOf(url: string): string[] {
  return [...url.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]!);
}

/** Routes with a required query: a valid one, so a call gets past validation to the access check. */
export const SAMPLE_QUERIES: Record<string, (w: RouteWorld) => string> = {
  'GET /v1/workspaces/:workspace/projects/:project/pipeline/status': (w) => `?service=${w.app.slug}&env=production`,
  'POST /v1/workspaces/:workspace/projects/:project/pipeline/deploy': (w) => `?service=${w.app.slug}&env=production`,
  'GET /v1/workspaces/:workspace/projects/:project/pipeline/history': (w) => `?service=${w.app.slug}&env=production`,
  'GET /v1/workspaces/:workspace/projects/:project/pipeline/metrics': (w) => `?service=${w.app.slug}&env=production`,
  'POST /v1/workspaces/:workspace/projects/:project/pipeline/rollback': (w) => `?service=${w.app.slug}&env=production`,
  'GET /v1/workspaces/:workspace/projects/:project/promote/preview': (w) =>
    `?service=${w.app.slug}&source_env=production&target_env=production`,
  'POST /v1/applications/:application_id/runs/attach': () => '?command=true',
};

/** The route's URL with every parameter filled (and its required query), or an error naming the missing fixture. */
export function fillPath(route: RouteEntry, w: RouteWorld): string {
  const query = SAMPLE_QUERIES[`${route.method} ${route.url}`]?.(w) ?? '';
  return `${route.url}${query}`.replace(/:([A-Za-z0-9_]+)/g, (_m, name: string) => {
    const fixture = PARAM_FIXTURES[name];
    if (!fixture) {
      throw new Error(
        `route ${route.method} ${route.url} has path parameter ':${name}' with no fixture: add one to PARAM_FIXTURES in test/control-plane/route-fixtures.ts`,
      );
    }
    return encodeURIComponent(fixture(w, route)!);
  });
}

/** Valid request bodies, so a call gets past validation to the access check. */
export const SAMPLE_BODIES: Record<string, (w: RouteWorld) => unknown> = {
  'POST /v1/auth/login': () => ({ email: 'nobody@example.com', password: 'nothing' }),
  'POST /v1/auth/api-keys': () => ({ name: 'sample' }),
  'PUT /v1/organizations/:org_slug/members/:user_id/role': () => ({ role: 'viewer' }),
  'PUT /v1/organizations/:org_slug/access-settings': () => ({ viewers_see_protected_logs: false }),
  'POST /v1/organizations/:org_slug/invitations': () => ({ email: `${unique('invited')}@example.com`, role: 'viewer' }),
  'POST /v1/invitations/:token/sign-up': () => ({ username: unique('signup'), password: 'sample-password' }),
  'POST /v1/organizations/:org_slug/grants': (w) => ({ project: w.project.slug, environment: 'production', username: w.owner.username }),
  'POST /v1/auth/cli-logins': () => ({ code: 'SAMPLE-CODE', port: 40000 }),
  'POST /v1/sso/issuers': () => ({
    name: unique('issuer'),
    display_name: 'Sample ID',
    discovery_url: 'https://id.example.org',
    client_id: 'slipway',
    client_secret: 'sample-client-secret',
  }),
  'POST /v1/sso/issuers/:issuer/group-mappings': (w) => ({ group: unique('group'), organization: w.org.slug, role: 'viewer' }),
  'POST /v1/users': () => ({ username: unique('sample'), email: `${unique('sample')}@example.com`, password: 'sample-password' }),
  'POST /v1/applications/:application_id/domains': () => ({ hostname: `${unique('sample')}.example.org` }),
  'POST /v1/organizations': () => ({ name: unique('Sample') }),
  'POST /v1/applications/:application_id/runs': () => ({ command: 'true' }),
  'POST /v1/organizations/:org_slug/members': () => ({ username: 'nobody-at-all' }),
  'PUT /v1/organizations/:org_slug/pipeline-limits': () => ({ build_timeout_seconds: 600 }),
  'POST /v1/projects': (w) => ({ name: unique('sample'), organization_id: w.org.id }),
  'POST /v1/workspaces/:workspace/projects': () => ({ name: unique('sample') }),
  'POST /v1/users/me/ssh-keys': () => ({ public_key: ssh2.utils.generateKeyPairSync('ed25519').public }),
  'PATCH /v1/workspaces/:workspace': () => ({ name: unique('Sample') }),
  'POST /v1/workspaces/:workspace/projects/:project/promote': () => ({ source_env: 'staging', target_env: 'production' }),
  'POST /v1/applications': (w) => ({ name: unique('sample'), project_id: w.project.id }),
  'PATCH /v1/applications/:application_id/settings': () => ({ health_check_path: '/sample' }),
  'PATCH /v1/applications/:application_id/git-remote': () => ({ allow_force_push: true }),
  'POST /v1/applications/:application_id/scale': () => ({ process_counts: { web: 3 } }),
  'PUT /v1/applications/:application_id/cron/:name': () => ({ schedule: '0 4 * * *', command: 'true' }),
  'PUT /v1/applications/:application_id/autoscaling/:process_type': () => ({ min: 1, max: 3, target: { cpu_percent: 60 } }),
  'POST /v1/configurations/:application_id': () => ({ name: 'SAMPLE_NAME', value: 'sample' }),
  'POST /v1/configurations/:application_id/bulk': () => ({ variables: { SAMPLE_NAME: 'sample' } }),
  'PATCH /v1/configurations/:application_id/:config_id': () => ({ value: 'sample' }),
  'POST /v1/workspaces': () => ({ name: unique('Sample') }),
  'POST /v1/organizations/:org_slug/webhooks': () => ({ url: 'http://127.0.0.1:9/hook', events: ['deployment.succeeded'] }),
  'POST /v1/workspaces/:workspace/members': () => ({ username: 'nobody-at-all' }),
  'POST /v1/workspaces/:workspace/teams': () => ({ name: unique('sample') }),
  'POST /v1/workspaces/:workspace/teams/:team/members': () => ({ username: 'nobody-at-all' }),
  'PATCH /v1/workspaces/:workspace/projects/:project': () => ({ name: 'Sample' }),
  'POST /v1/workspaces/:workspace/projects/:project/envs': () => ({ name: unique('sample') }),
  'PATCH /v1/workspaces/:workspace/projects/:project/envs/:env': () => ({ auto_deploy_branch: 'main' }),
  'POST /v1/workspaces/:workspace/projects/:project/envs/:env/promote': () => ({ from: 'production' }),
  'POST /v1/workspaces/:workspace/projects/:project/envs/:env/services': () => ({ name: unique('sample') }),
  'POST /v1/workspaces/:workspace/projects/:project/envs/:env/services/:service/scale': () => ({ process_counts: { web: 1 } }),
  'PATCH /v1/workspaces/:workspace/projects/:project/envs/:env/services/:service': () => ({ auto_deploy_branch: 'release' }),
  'PUT /v1/workspaces/:workspace/projects/:project/previews': () => ({ template_environment: 'production' }),
  'PUT /v1/github/installations/:installation_id': (w) => ({ organization: w.org.slug }),
  'POST /v1/organizations/:org_slug/addons': () => ({ name: unique('addon'), kind: 'redis' }),
  'POST /v1/organizations/:org_slug/alert-rules': () => ({ name: unique('rule'), metric: 'error_rate', threshold: 0.1 }),
  'PUT /v1/organizations/:org_slug/alert-rules/:rule/silence': () => ({ for_seconds: 600 }),
  'POST /v1/applications/:application_id/volumes': () => ({ name: unique('vol'), mount_path: `/srv/${unique('v')}`, size_mib: 16 }),
  'PATCH /v1/applications/:application_id/volumes/:volume': () => ({ size_mib: 32 }),
  'POST /v1/organizations/:org_slug/volumes/detached/:volume_id/attach': (w) => ({ application_id: w.app.id }),
  'PATCH /v1/organizations/:org_slug/addons/:addon': () => ({ plan: 'standard' }),
  'POST /v1/organizations/:org_slug/addons/:addon/attachments': (w) => ({ application_id: w.app.id, as: 'SAMPLE_URL' }),
  'POST /v1/organizations/:org_slug/addons/:addon/query': () => ({ sql: 'SELECT 1' }),
  'PUT /v1/organizations/:org_slug/addons/:addon/drills/check': () => ({ query: 'SELECT 1' }),
  'POST /v1/organizations/:org_slug/addons/:addon/restore': () => ({ name: unique('fork'), time: new Date().toISOString() }),
  'POST /v1/organizations/:org_slug/addons/:addon/swap': (w) => ({ attachment_id: w.addonAttachmentId, confirm: true }),
  'POST /v1/organizations/:org_slug/notification-channels': () => ({
    kind: 'slack',
    url: 'https://hooks.slack.example/services/T1/B1/x',
    events: ['deployment.succeeded'],
  }),
  'PUT /v1/workspaces/:workspace/projects/:project/envs/:env/maintenance': () => ({ enabled: false }),
  'POST /v1/organizations/:org_slug/log-drains': () => ({ kind: 'https', url: 'https://logs.example.com/ingest' }),
  'POST /v1/projects/:project_id/compose/plan': () => ({ compose: 'services:\n  sample:\n    image: postgres:16\n' }),
  'POST /v1/projects/:project_id/compose/apply': () => ({ compose: 'services:\n  sample:\n    image: postgres:16\n' }),
};

/** Scoped config routes share one shape at every scope. */
export function sampleBody(route: RouteEntry, w: RouteWorld): unknown {
  const key = `${route.method} ${route.url}`;
  if (SAMPLE_BODIES[key]) return SAMPLE_BODIES[key]!(w);
  if (route.method === 'POST' && route.url.endsWith('/config')) return { name: 'SAMPLE_NAME', value: 'sample' };
  if (route.method === 'POST' && route.url.endsWith('/config/bulk')) return [{ name: 'SAMPLE_NAME', value: 'sample' }];
  if (route.method === 'PATCH' && route.url.endsWith('/:config_id')) return { value: 'sample' };
  // A body whose fields are all optional accepts an empty object.
  return route.method === 'POST' || route.method === 'PATCH' || route.method === 'PUT' ? {} : undefined;
}

/**
 * Writes a plain member may still make while the world's `production` is protected, and
 * why each reaches no protected environment. Every other non-GET route must answer 403 to
 * a plain member (docs/api-decisions.md, "Protected environments"). ROUTE AUTHORS: a new
 * write route is refused by default; list it here only if it cannot change what a
 * protected environment runs.
 */
export const MEMBER_WRITES_BESIDE_PROTECTED: Record<string, string> = {
  'POST /v1/auth/login': 'logs in',
  'POST /v1/auth/logout': "ends the caller's own session",
  'POST /v1/auth/api-keys': "the caller's own key",
  'DELETE /v1/auth/api-keys/:id': "the caller's own key",
  'POST /v1/users/me/ssh-keys': "the caller's own SSH key",
  'DELETE /v1/users/me/sessions': "the caller's own sign-ins",
  'DELETE /v1/users/me/sessions/:session_id': "the caller's own sign-in",
  'DELETE /v1/users/me/ssh-keys/:key_id': "the caller's own SSH key",
  'POST /v1/organizations': 'a new organization',
  'POST /v1/workspaces': 'a new workspace',
  'POST /v1/projects': 'a new project (its production starts unprotected)',
  'POST /v1/workspaces/:workspace/projects': 'a new project (its production starts unprotected)',
  'POST /v1/workspaces/:workspace/projects/:project/envs': 'a new environment (creating a protected one needs an admin)',
  'PATCH /v1/workspaces/:workspace/projects/:project': 'renaming; moving the project to another team needs an admin',
  'DELETE /v1/workspaces/:workspace/projects/:project/previews': 'turning previews off starts and stops nothing',
  'POST /v1/integrations/github/hooks': 'public: authenticated by its signature, not by membership',
  'POST /v1/integrations/docker/auth': 'public: issues a registry token for the caller',
  'POST /v1/projects/:project_id/compose/plan': 'a plan: it changes nothing (apply is refused)',
  'POST /v1/invitations/:token/accept': 'joins an organization by an invitation to the caller (nothing of a protected environment)',
};
